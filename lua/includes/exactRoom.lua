--[[
  The room source of exact delivery (see includes/takeJobsBody): a bucket has room when every limit's
  window counter does, and a delivery counts one token in each, in the same script that moves the job to
  active. This needs the queue's keys and its throttles' in one slot (or one Redis server).
  A source is the list of the bucket's counters (includes/bucketCounters), nil when no live worker
  declares the throttle.
]]
--- @include "windowCounter"
--- @include "nodeIdentity"
--- @include "bucketCounters"
--- @include "grantorRecovery"
--- @include "throttleStats"

local exactRoomContext

-- A restart or promotion of this node (it holds the queue and its counters) holds the namespace's
-- throttles (includes/recoveryHold): for their longest window, since the deliveries recorded here may be
-- lost too, unless the worker says Redis keeps acknowledged writes (ctx.afterRestart 'resume').
-- A call that reaches Redis long after it was sent may be running on a master that was frozen and replaced
-- meanwhile (SIGSTOP, a stalled VM): it would count deliveries in writes Redis drops once the node learns it
-- was demoted, beside the new master's. Such a call delivers nothing throttled: every bucket looks full,
-- with room again at once, so its classes are looked at again by the next call, sent afresh.
local function initRoom(ctx)
  exactRoomContext = ctx
  ctx.late = ctx.lateAfterUs > 0 and ctx.now > ctx.lateAfterUs
  noticeGrantorChange(ctx.throttlePrefix, ctx.nowMs, ctx.leaseMs, ctx.afterRestart == 'resume', true)
end

local function roomSource(bucket)
  return bucketCounters(exactRoomContext.throttlePrefix, bucket, exactRoomContext.now)
end

local function roomLeft(counters)
  if exactRoomContext.late then return 0 end
  return bucketRoom(counters)
end

-- A window counter's room never comes "on its way": a full bucket is full.
local comingRoom = nil

local function roomReturnsAtUs(counters)
  if exactRoomContext.late then return exactRoomContext.now end
  return bucketRoomAtUs(counters)
end

local function spendRoom(counters)
  addBucketTokens(counters, 1, exactRoomContext.leaseMs)
end

local function noteBlocked(member, order, bucket, atUs)
  noteFull(exactRoomContext.throttlePrefix, bucket, math.ceil(atUs / 1000))
end

local function saveRoom()
  saveBucketCounters()
  saveThrottleStats(exactRoomContext.queueBase, exactRoomContext.throttlePrefix, exactRoomContext.nowMs)
end
