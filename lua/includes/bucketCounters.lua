--[[
  The counters of throttle buckets within one script run: each limit's counter is loaded once (and swept),
  shared by every class that draws from it, and saved once at the end.
  A throttle can be held (no room at all) for a while after the node holding its counters restarted or was
  promoted (includes/nodeIdentity, includes/recoveryHold): its counters may have lost deliveries.
  A paused bucket (includes/throttlePauses) is held like a throttle after a failover, until its pause ends.
  Every kind keeps the throttle's bucket indexes (includes/bucketIndexes), written by saveBucketCounters.

  Each kind of limit is one include with one table of the same functions (windowKind: includes/windowKind,
  rateKind: includes/rateCounter, inFlightKind: includes/inFlightCounter), and the functions below go over
  `kinds`; a bucket's counters are one table where each kind keeps its own (the windows' in the array part,
  counters.rate, counters.inFlight), and so are a throttle's limits. What a kind provides:
    readField(field, value, limits)   true when the limits hash's field is the kind's: read into limits
    readDone(limits)                  after every field: finishes what readField kept; true when the
                                      throttle has a limit of this kind
    load(limits, bucket, nowUs, counters)   the bucket's counters of this kind into counters (once a run)
    room(counters, room)              the lower of room (nil: none yet) and what the kind could grant now
    roomAtUs(counters, cost, at, lookAgainUs)   the later of at and when the kind has room for cost
                                      (lookAgainUs for a cost it can never fit)
    waitAtUs(counters, units, at)     the later of at and when units more could have gone one after
                                      another (an estimate for a backlog: includes/deadlines)
    add(counters, count, leaseMs)     counts count tokens granted now (a kind that counts jobs, not tokens,
                                      does nothing: exact delivery names the job, includes/exactRoom)
    save(waitingQueueBase)            writes every counter of the kind loaded in this run
    giveBack(...)                     takes back what a delivery counted and will not spend. Its arguments
                                      are the kind's, since what comes back differs: the windows', a bucket's
                                      counters and the grant's time, lease and count; the rate's, its key and
                                      the TATs its grant read and wrote (one grant, undone while it is the
                                      latest); the concurrency's, a job, from every counter it is in
  A new kind is its include (its counter, and its table with these functions), its entry in `kinds` and
  `saveOrder` below, and its fields in the limits hash (written by lua/publishLimits-n.lua from
  src/lua/calls/publishLimits.ts' limitFields). Fields that are no kind's are the throttle's: p (paused), k
  (keys have overrides), ou and d (the whole throttle's override, includes/limitOverrides), a (an adaptive
  limit, includes/adaptiveLimit, applied per bucket) and v (the
  registry version). The limits hash is read once per throttle a run (limitsCache), so going over the kinds
  for each field costs nothing per job.
  Needs, from the including script: rcall and includes/nowUs (the kinds bring the rest).
]]
--- @include "windowKind"
--- @include "recoveryHold"
--- @include "rateCounter"
--- @include "throttlePauses"
--- @include "limitOverrides"
--- @include "inFlightCounter"
--- @include "adaptiveLimit"
-- What other scripts use. The rest is local to the block below: a script's main chunk holds at most
-- 200 locals, and the delivery scripts, with bullmq's includes, come close to that.
local throttleLimits, bucketCounters, bucketRoom, bucketRoomAtUs, bucketWaitAtUs, addBucketTokens, saveBucketCounters
do
local limitsCache = {}
-- Every kind of limit, in the order a bucket's counters are loaded and looked at. Saved concurrency first
-- (saveBucketCounters says why): saveOrder.
local kinds, saveOrder = { windowKind, rateKind, inFlightKind }, { inFlightKind, windowKind, rateKind }

-- Below; only throttleLimits calls it (a local of the block, not of the main chunk).
local lapsedOverrideRemoved

-- The throttle's effective limits, each kind's as the kind reads them (the windows' as { { max, windowMs,
-- keyHead, keyTail } }, limits.rate, limits.concurrency), with the throttle's key base; nil when no live
-- worker declares it (no limit of any kind).
function throttleLimits(throttlePrefix, encodedName)
  local cached = limitsCache[encodedName]
  if cached == nil then
    local flat = rcall('HGETALL', limitsKey(throttlePrefix, encodedName))
    cached = { base = throttleBase(throttlePrefix, encodedName) }
    flat = lapsedOverrideRemoved(flat)
    for i = 1, #flat, 2 do
      local field = flat[i]
      if field == 'p' then
        cached.paused = true
      elseif field == 'k' then
        cached.keyOverrides = true
      elseif field == 'a' then
        cached.adaptive = adaptiveLimit.parse(flat[i + 1])
      else
        for k = 1, #kinds do
          if kinds[k].readField(field, flat[i + 1], cached) then break end
        end
      end
    end
    local limited = false
    for k = 1, #kinds do
      if kinds[k].readDone(cached) then limited = true end
    end
    cached.limited = limited
    if limited then cached.heldUntilUs = recoveryHeldUntilUs(throttlePrefix, encodedName, cached) end
    limitsCache[encodedName] = cached
  end
  if not cached.limited then return nil end
  return cached
end

-- A limits hash read while the whole throttle's override has lapsed (ou passed, not yet rewritten by a
-- publication): its declared windows (d) instead of the override's (includes/limitOverrides).
function lapsedOverrideRemoved(flat)
  -- Most throttles have no override: found out without building anything.
  local untilMs, declaredText
  for i = 1, #flat, 2 do
    if flat[i] == 'ou' then untilMs = tonumber(flat[i + 1]) elseif flat[i] == 'd' then declaredText = flat[i + 1] end
  end
  if untilMs == nil or untilMs == 0 or math.floor(nowUs() / 1000) < untilMs then return flat end
  local rebuilt = {}
  for i = 1, #flat, 2 do
    if not tonumber(flat[i]) and flat[i] ~= 'ou' then
      rebuilt[#rebuilt + 1] = flat[i]
      rebuilt[#rebuilt + 1] = flat[i + 1]
    end
  end
  for w, n in string.gmatch(declaredText or '', '(%d+):(%d+)') do
    rebuilt[#rebuilt + 1] = w
    rebuilt[#rebuilt + 1] = n
  end
  return rebuilt
end

-- The limits one bucket counts: its throttle's, or merged with the bucket's own override while it lasts.
-- An override is of windows (includes/limitOverrides): every other kind's limits are the throttle's.
local function overriddenLimits(limits, bucket, nowUs)
  if not limits.keyOverrides then return limits end
  local override = activeOverride(rcall('HGET', limits.base .. ':overrides', bucket.bucket), math.floor(nowUs / 1000))
  if not override then return limits end
  local declared = {}
  for _, limit in ipairs(limits) do declared[limit.windowMs] = limit.max end
  -- Every field but the windows (the array part), whichever kind or the throttle it belongs to.
  local own = {}
  for name, value in pairs(limits) do
    if type(name) ~= 'number' then own[name] = value end
  end
  for windowMs, max in pairs(mergedWindows(declared, override)) do windowKind.readField(tostring(windowMs), max, own) end
  return own
end

-- The limits one bucket counts: its throttle's, merged with the bucket's own override, an adaptive limit at
-- its live value (includes/adaptiveLimit).
local function limitsOfBucket(limits, bucket, nowUs)
  limits = overriddenLimits(limits, bucket, nowUs)
  if limits.adaptive then return adaptiveLimit.applied(limits, bucket, nowUs) end
  return limits
end

-- Every counter of one bucket, or nil when its throttle has no limits.
local bucketCache = {}
function bucketCounters(throttlePrefix, bucket, nowUs)
  local counters = bucketCache[bucket.id]
  if counters then return counters end
  local limits = throttleLimits(throttlePrefix, bucket.name)
  if limits == nil then return nil end
  limits = limitsOfBucket(limits, bucket, nowUs)
  -- Each kind loads its counters of the bucket (the windows' in the array part, the rate's and the
  -- concurrency's as counters.rate and counters.inFlight), once per script (bucketCache).
  counters = {}
  for i = 1, #kinds do kinds[i].load(limits, bucket, nowUs, counters) end
  counters.heldUntilUs, counters.nowUs = math.max(limits.heldUntilUs, pausedUntilUs(limits.base, bucket.bucket, limits.paused, nowUs)), nowUs
  counters.bucketId = bucket.id
  bucketCache[bucket.id] = counters
  return counters
end

-- Tokens the bucket could still grant now (the tightest of its limits).
function bucketRoom(counters)
  if counters.heldUntilUs > counters.nowUs then return 0 end
  local room = nil
  for i = 1, #kinds do room = kinds[i].room(counters, room) end
  return room or 0
end

-- A job costing more than a limit's N could never go; the worker fails such jobs as it classifies them, but a
-- limit lowered at run time (an override) can still meet one: it is looked at again this often.
local OVER_CAPACITY_LOOK_US = 1000000

-- When the bucket next has room for `cost` more (1 unless given; us), 0 when it has room now.
function bucketRoomAtUs(counters, cost)
  cost = cost or 1
  local at = 0
  if counters.heldUntilUs > counters.nowUs then at = counters.heldUntilUs end
  -- A cost over a limit's N (a concurrency's n) never fits: looked at again this soon.
  local lookAgainUs = counters.nowUs + OVER_CAPACITY_LOOK_US
  for i = 1, #kinds do at = kinds[i].roomAtUs(counters, cost, at, lookAgainUs) end
  return at
end

-- When `units` more could have gone, one grant after another with none between, by the bucket's limits (us):
-- an estimate for a backlog (includes/deadlines), which leaves out pauses and holds (their end is not a limit's).
function bucketWaitAtUs(counters, units)
  local at = counters.nowUs
  for i = 1, #kinds do at = kinds[i].waitAtUs(counters, units, at) end
  return at
end

-- Counts `count` tokens granted now with lease leaseMs in every limit of the bucket.
function addBucketTokens(counters, count, leaseMs)
  for i = 1, #kinds do kinds[i].add(counters, count, leaseMs) end
end

-- waitingQueueBase: the queue whose classes may wait on the buckets now (woken when a job in flight ends).
-- Concurrency first: the time kinds' index notes depend on whether it holds the bucket (includes/bucketIndexes).
function saveBucketCounters(waitingQueueBase)
  for i = 1, #saveOrder do saveOrder[i].save(waitingQueueBase) end
  bucketIndexes.flush()
end
end -- of the block that keeps the helpers local
