--[[
  The room source of exact delivery (see includes/takeJobsBody): a bucket has room when every limit's
  window counter does, and a delivery counts one token in each, in the same script that moves the job to
  active. This needs the queue's keys and its throttles' in one slot (or one Redis server).
  A source is the list of the bucket's counters (includes/bucketCounters), nil when no live worker
  declares the throttle.
]]
--- @include "windowCounter"
--- @include "bucketCounters"
--- @include "throttleStats"

local exactRoomContext

local function initRoom(ctx)
  exactRoomContext = ctx
end

local function roomSource(bucket)
  return bucketCounters(exactRoomContext.throttlePrefix, bucket, exactRoomContext.now)
end

local function roomLeft(counters)
  return bucketRoom(counters)
end

local function roomReturnsAtUs(counters)
  return bucketRoomAtUs(counters)
end

local function spendRoom(counters)
  for j = 1, #counters do addToken(counters[j], exactRoomContext.leaseMs) end
end

local function noteBlocked(member, order, bucket, atUs)
  noteFull(exactRoomContext.throttlePrefix, bucket, math.ceil(atUs / 1000))
end

local function saveRoom()
  saveBucketCounters()
  saveThrottleStats(exactRoomContext.queueBase, exactRoomContext.throttlePrefix, exactRoomContext.nowMs)
end
