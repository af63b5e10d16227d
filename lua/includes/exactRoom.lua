--[[
  The room source of exact delivery (see includes/takeJobsBody): a bucket has room when every limit's
  window counter does, and a delivery counts one token in each, in the same script that moves the job to
  active. This needs the queue's keys and its throttles' in one slot (or one Redis server).
  A source is the list of the bucket's counters (includes/bucketCounters), nil when no live worker
  declares the throttle. A throttle's concurrency counts the job itself (includes/inFlightCounter): the
  job's entry goes into the bucket's in-flight counter here, and the counters it is in into the queue's
  in-flight index, for releaseInFlight when it ends.
]]
--- @include "windowCounter"
--- @include "nodeIdentity"
--- @include "bucketCounters"
--- @include "grantorRecovery"
--- @include "throttleStats"
--- @include "inFlightCounter"
--- @include "wakeClaims"

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
  -- ARGV[15 + K] (lua/takeNextJobs-19.lua; ctx.K: K, the lock tokens): the namespace's node identity the worker saw recorded.
  ctx.hmax = noticeGrantorChange(ctx.throttlePrefix, ctx.nowMs, ctx.leaseMs, ctx.afterRestart == 'resume', ARGV[15 + ctx.K])
  -- Jobs counted in flight this run -> the counters they are in ({ key, bucket id, ... }), for the queue's index.
  -- (Fields of the run's context, not locals: the delivery scripts' main chunk is near Lua's 200.)
  ctx.inFlightJobs = {}
  -- Whether the queue's in-flight index exists (nil: not looked yet; freshJobTaken).
  ctx.inFlightIndexExists = nil
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

local function roomReturnsAtUs(counters, cost)
  if exactRoomContext.late then return exactRoomContext.now end
  return bucketRoomAtUs(counters, cost)
end

-- When `units` more could have gone by the bucket's limits (an estimate: includes/deadlines).
local function roomWaitAtUs(counters, units)
  return bucketWaitAtUs(counters, units)
end

-- When a caller told to wait for the bucket's room (at atUs) should look again: one caller per room return
-- (includes/wakeClaims), so that waiting slots across queues and processes cost one call each time room returns.
local function roomWakeAtUs(bucketId, atUs)
  local bucket = parseBucketId(bucketId)
  local counters = roomSource(bucket)
  if counters == nil or exactRoomContext.late then return atUs end
  return wakeClaims.claim(exactRoomContext.throttlePrefix, bucket, counters, atUs, exactRoomContext.now)
end


-- With a start deadline (leaseMs > 0), what each job delivered this run was counted in, in delivery order, so
-- that a job whose processor would start too late can give it back (src/worker/lateStarts/startDeadlines.ts): per bucket
-- "<bucket id>$<cost>@<window ms>,...", joined by '|', every bucket the job was noted in (lua/lateStartPutBack-n
-- takes the notes back), the windows empty where none counted it, and for a bucket with a rate "*<TAT its grant
-- read>:<TAT it wrote>" at the end (a late job's grant is undone while it is the latest: lua/returnTokens-n.lua);
-- '' when no window and no rate with a lease counted the job (it has no deadline). A rate granted with lease H
-- (its rh, includes/rateCounter) keeps its
-- invariant only for tokens spent within H of their grant: when H is shorter than the call's h, the ticket
-- starts "<H ms>#" (the job's deadline; '#' never occurs in a bucket id). Rates keep what they granted
-- but the latest grant (includes/rateCounter says why), and concurrency returns as the job ends.
--
-- A bucket far from full counts this run's deliveries with a longer lease (its windows' tokens held for W + L,
-- L = a quarter of its shortest window, at most LONG_LEASE_MS; a whole window cost a 100 ms window at saturation
-- 0.54 of N/W against 0.79, its bucket emptying at each burst): the same proof holds for any lease a token is counted with
-- (the starts in any window W come from tokens all counted at the last of their grants), and a job that only
-- such buckets counted may start up to L late instead of h, so a busy event loop does not send back jobs that
-- no limit was near. Far from full: every window holds at most a quarter of its N with this delivery, so that
-- at most about that much room returns later than W + h should demand rise. Such a bucket's part of the ticket
-- ends "~<L>" (its windows' lease, to give them back), and the job's deadline is the least lease that counted
-- it: "<D>#" first when that is not h. The record's hmax (includes/grantorRecovery) takes L, so that a
-- failover's recovery counts these tokens for as long.
-- One local (the delivery scripts' main chunk is near Lua's 200): tickets in order; the job being counted (a
-- job's buckets are spent one after another, then its ticket is taken: placeJobs.deliver), with its ticket so far
-- (text), whether a window or a rate with a lease counted it (windowed), the windows' least lease (windowL) and
-- the rates' deadline (rateH); the longest lease used; partOf, delivered().
local roomTicketing = { tickets = {}, job = {}, longestL = 0, LONG_LEASE_MS = 250 }

-- A bucket's part of a ticket but for its rate's TATs: the same for every job of the run at one cost (the
-- bucket's lease is the run's), so it is built once per bucket and cost (counters.ticketParts).
function roomTicketing.partOf(counters, cost, lease)
  local byCost = counters.ticketParts
  if byCost == nil then
    byCost = {}
    counters.ticketParts = byCost
  end
  local part = byCost[cost]
  if part == nil then
    local windows = {}
    for i = 1, #counters do windows[i] = counters[i].g.windowMs end
    part = counters.bucketId .. '$' .. cost .. '@' .. table.concat(windows, ',') .. (lease ~= exactRoomContext.leaseMs and ('~' .. lease) or '')
    byCost[cost] = part
  end
  return part
end

-- The lease this run counts the bucket's windows with: h, or the longer one while the bucket is far from full.
function roomTicketing.leaseFor(counters, cost)
  local lease = counters.runLeaseMs
  if lease then return lease end
  lease = exactRoomContext.leaseMs
  if lease > 0 and #counters > 0 then
    local long = roomTicketing.LONG_LEASE_MS
    for i = 1, #counters do
      local counter = counters[i]
      if counter.n + cost > counter.max / 4 then long = 0 end
      if counter.g.windowMs / 4 < long then long = math.floor(counter.g.windowMs / 4) end
    end
    if long > lease then lease = long end
  end
  counters.runLeaseMs = lease
  if lease > roomTicketing.longestL then roomTicketing.longestL = lease end
  return lease
end

local function spendRoom(counters, fresh, jobId, cost)
  cost = cost or 1
  local lease = roomTicketing.leaseFor(counters, cost)
  local rate = counters.rate
  local rateBefore = rate and rate.tat
  addBucketTokens(counters, cost, lease)
  if exactRoomContext.leaseMs > 0 then
    local job = roomTicketing.job
    if job.id ~= jobId then job.id, job.text, job.windowed, job.windowL, job.rateH = jobId, nil, false, nil, nil end
    local part = roomTicketing.partOf(counters, cost, lease)
    if rate then part = part .. '*' .. intArg(rateBefore) .. ':' .. intArg(rate.tat) end
    job.text = job.text and (job.text .. '|' .. part) or part
    if #counters > 0 then
      job.windowed = true
      if job.windowL == nil or lease < job.windowL then job.windowL = lease end
    end
    if rate and rate.leaseMs > 0 then
      job.windowed = true
      if job.rateH == nil or rate.leaseMs < job.rateH then job.rateH = rate.leaseMs end
    end
  end
  local inFlight = counters.inFlight
  -- A job whose cost cannot be counted (0: it fails before its processor runs) holds no slot.
  if inFlight and cost > 0 then
    addInFlight(inFlight, exactRoomContext.queueBase, jobId, cost)
    local listed = exactRoomContext.inFlightJobs[jobId]
    if not listed then
      listed = {}
      exactRoomContext.inFlightJobs[jobId] = listed
    end
    listed[#listed + 1] = inFlight.key
    listed[#listed + 1] = inFlight.bucketId
  end
end

local function noteBlocked(member, order, bucket, atUs)
  noteFull(exactRoomContext.throttlePrefix, bucket, math.ceil(atUs / 1000))
end

-- A job from wait (or prioritized) whose earlier delivery still counts in flight ended without its release
-- (its worker died, bullmq's stalled check put it back): that delivery stops counting before this one is
-- looked at (the job may be in active just now, to be looked at, which would make it look in flight).
local function freshJobTaken(jobId)
  local ctx = exactRoomContext
  local indexKey = ctx.queueBase .. ':in-flight'
  if ctx.inFlightIndexExists == nil then ctx.inFlightIndexExists = rcall('EXISTS', indexKey) == 1 end
  if ctx.inFlightIndexExists then inFlightKind.giveBack(indexKey, ctx.queueBase, jobId, ctx.now, true) end
end

local function saveRoom()
  saveBucketCounters(exactRoomContext.queueBase)
  -- initRoom read hmax (a longer lease is used only when h > 0, when it is read).
  if roomTicketing.longestL > exactRoomContext.hmax then
    rcall('HSET', exactRoomContext.throttlePrefix .. ':grantor', 'hmax', roomTicketing.longestL)
  end
  for jobId, listed in pairs(exactRoomContext.inFlightJobs) do rcall('HSET', exactRoomContext.queueBase .. ':in-flight', jobId, cjson.encode(listed)) end
  saveThrottleStats(exactRoomContext.queueBase, exactRoomContext.throttlePrefix, exactRoomContext.nowMs)
end

-- The job delivered next in the reply (after spendRoom for each of its buckets): its ticket (see roomTicketing).
function roomTicketing.delivered(jobId)
  -- Without a deadline (h 0) nothing reads tickets: the delivery script does no more than it did.
  if exactRoomContext.leaseMs <= 0 then return end
  local job = roomTicketing.job
  local ticket = ''
  if job.id == jobId and job.windowed then
    -- The job's deadline: the least lease that counted it, its windows' or a rate's.
    local least = job.windowL or exactRoomContext.leaseMs
    if job.rateH and job.rateH < least then least = job.rateH end
    ticket = (least ~= exactRoomContext.leaseMs and (least .. '#') or '') .. job.text
  end
  job.id = nil
  roomTicketing.tickets[#roomTicketing.tickets + 1] = ticket
end
