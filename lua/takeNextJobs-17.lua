--[[
  Delivers the next jobs of a throttled queue: the first held jobs, in queue order, whose every bucket has
  room. Each delivery counts one token in every limit of every bucket it draws from and moves the job to
  active exactly as bullmq's moveToActive does (lock, `active` event, processedOn, ats). Jobs that cannot
  go stay held, untouched.

  Held jobs of classes with room wait in one queue-ordered set (ready-jobs), so a job that can go costs
  the same whatever is held elsewhere. The first job of a class that meets a full bucket moves into the
  class's own list, the class waits on that bucket, and later jobs of the class follow it there as they
  come up; none of them is looked at again until the bucket has room. So held backlogs cost nothing per
  delivery, and each held job is moved at most once per time its bucket fills.

  Input:
    KEYS[1]  wait          KEYS[6]  meta          KEYS[11] wakeups        (ZSET bucket id -> ms)
    KEYS[2]  active        KEYS[7]  pc            KEYS[12] state          (HASH gen, held, ...)
    KEYS[3]  prioritized   KEYS[8]  marker        KEYS[13] classes        (SET)
    KEYS[4]  events        KEYS[9]  ready-jobs    KEYS[14] stale          (SET)
    KEYS[5]  delayed       KEYS[10] ready-classes KEYS[15] class-state    (HASH class -> bucket id)
                                                 KEYS[16] removed-held   (SET, see forgetRemovedJobs)
                                                 KEYS[17] blocked-since  (ZSET class -> ms it began to wait)
    ARGV[1]  bullmq key prefix of the queue ("bull:orders:")
    ARGV[2]  lockDuration (ms)   ARGV[3] worker name ('' for none)
    ARGV[4]  queue base of our keys     ARGV[5] throttle key prefix
    ARGV[6]  most refusals and moves to spend     ARGV[7] leaseMs (h)
    ARGV[8]  K, then K lock tokens: up to K jobs are delivered, the i-th locked with the i-th token
    (test builds read one more trailing ARGV, a clock offset in ms)

  Class and bucket keys are composed from ARGV[4] and ARGV[5] (includes/schedulerKeys), as bullmq
  composes job keys from ARGV[1]: in Redis Cluster, give the queue a hash-tagged prefix such as {bull}.

  Output:
    { nowUs, nextWakeMs, nextDelayedMs, unclassified, stale, dropped, gen, n, id_1, job_1, ..., id_n, job_n }
    nextWakeMs: when a full bucket next has room (0: none); nextDelayedMs: the next delayed job (0: none);
    both are only worked out when fewer than K jobs went. unclassified: jobs in wait/prioritized not yet
    classified; stale: classes of an older config generation; dropped: held ids whose job had been
    removed; gen: the queue's config generation; job_i: the job hash as HGETALL pairs.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"
--- @include "includes/schedulerKeys"
--- @include "includes/bucketCounters"
--- @include "includes/throttleStats"
--- @include "bullmq/includes/getQueueMetadata"
--- @include "bullmq/includes/getNextDelayedTimestamp"
--- @include "bullmq/includes/promoteDelayedJobs"
--- @include "bullmq/includes/prepareJobForProcessing"

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delayedKey, metaKey, pcKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local readyJobsKey, readyClassesKey, wakeupsKey, stateKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local classesKey, staleKey, classStateKey, removedHeldKey, blockedSinceKey = KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17]
local jobPrefix = ARGV[1]
local lockDuration = tonumber(ARGV[2])
local workerName = ARGV[3] ~= '' and ARGV[3] or nil
local queueBase, throttlePrefix = ARGV[4], ARGV[5]
local budget, leaseMs = tonumber(ARGV[6]), tonumber(ARGV[7])
local wanted = tonumber(ARGV[8])

local now = nowUs()
local nowMs = math.floor(now / 1000)

local isPausedOrMaxed = getQueueMetadata(metaKey, activeKey, waitKey)
promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey, eventsKey, jobPrefix, nowMs, pcKey, isPausedOrMaxed)

-- Buckets whose room has come back: hand as many of their waiting classes back as they have room for.
local WAKE_BATCH_MAX = 64
local due = rcall('ZRANGEBYSCORE', wakeupsKey, '-inf', nowMs, 'LIMIT', 0, 8)
for _, bucketId in ipairs(due) do
  local counters = bucketCounters(throttlePrefix, parseBucketId(bucketId), now)
  local room = WAKE_BATCH_MAX
  if counters then room = math.min(bucketRoom(counters), WAKE_BATCH_MAX) end
  local waiting = waitersKey(queueBase, bucketId)
  if room > 0 then
    local woken = rcall('ZPOPMIN', waiting, room)
    local released = 0
    for i = 1, #woken, 2 do
      rcall('ZADD', readyClassesKey, woken[i + 1], woken[i])
      rcall('HDEL', classStateKey, woken[i])
      rcall('ZREM', blockedSinceKey, woken[i])
      released = released + rcall('ZCARD', classJobsKey(queueBase, woken[i]))
    end
    noteWaiting(throttlePrefix, parseBucketId(bucketId), -released)
    if released > 0 then rcall('HINCRBY', stateKey, 'blocked', -released) end
  end
  if rcall('EXISTS', waiting) == 0 then
    rcall('ZREM', wakeupsKey, bucketId)
  elseif room > 0 or counters == nil then
    -- More waiters than room: look again on the next call (a refusal reschedules it exactly).
    rcall('ZADD', wakeupsKey, nowMs, bucketId)
  else
    rcall('ZADD', wakeupsKey, math.ceil(bucketRoomAtUs(counters) / 1000), bucketId)
  end
end

local gen = rcall('HGET', stateKey, 'gen') or ''
local concurrency = tonumber(rcall('HGET', metaKey, 'concurrency'))
local delivered, dropped, deliveredCount = {}, 0, 0
local waitingOn = {}

-- The class's counters and buckets, or nil and the bucket it must wait on (with when it has room), or 'stale'.
local function checkClass(member)
  local memberGen, buckets = parseClass(member)
  if memberGen ~= gen then return 'stale' end
  local counters, fullBucket, fullAtUs = {}, nil, 0
  for _, bucket in ipairs(buckets) do
    local own = bucketCounters(throttlePrefix, bucket, now)
    if own == nil then return 'stale' end
    for _, counter in ipairs(own) do counters[#counters + 1] = counter end
    local roomAt = bucketRoomAtUs(own)
    if roomAt > fullAtUs then fullAtUs, fullBucket = roomAt, bucket end
  end
  if fullBucket then return nil, fullBucket, fullAtUs end
  return counters, buckets
end

local function deliver(jobId, counters, buckets)
  if rcall('EXISTS', jobPrefix .. jobId) == 0 then
    -- Removed while held: no longer counted if forgetRemovedJobs saw it go, else uncounted now.
    if rcall('SREM', removedHeldKey, jobId) == 0 then deliveredCount = deliveredCount + 1 end
    dropped = dropped + 1
    return
  end
  deliveredCount = deliveredCount + 1
  for _, counter in ipairs(counters) do addToken(counter, now, leaseMs) end
  for _, bucket in ipairs(buckets) do noteDelivered(bucket) end
  rcall('LPUSH', activeKey, jobId)
  local lockOpts = { token = ARGV[8 + #delivered / 2 + 1], lockDuration = lockDuration, name = workerName }
  local prepared = prepareJobForProcessing(jobPrefix, nil, eventsKey, jobId, nowMs, nil, nil, markerKey, lockOpts)
  delivered[#delivered + 1] = jobId
  delivered[#delivered + 1] = prepared[1]
end

local function wait(member, order, bucket, atUs)
  rcall('HSET', classStateKey, member, bucket.id)
  rcall('ZADD', waitersKey(queueBase, bucket.id), order, member)
  rcall('ZADD', wakeupsKey, math.ceil(atUs / 1000), bucket.id)
  rcall('ZADD', blockedSinceKey, 'NX', nowMs, member)
  noteFull(throttlePrefix, bucket, math.ceil(atUs / 1000))
  local held = rcall('ZCARD', classJobsKey(queueBase, member))
  noteWaiting(throttlePrefix, bucket, held)
  rcall('HINCRBY', stateKey, 'blocked', held)
  waitingOn[member] = bucket.id
end

-- Moves a ready job into its class's own list (its class waits on a bucket, or is stale); the caller
-- removes it from ready-jobs.
local function file(member, jobId, order)
  rcall('ZADD', classJobsKey(queueBase, member), order, jobId)
  rcall('SADD', classesKey, member)
  local bucketId = waitingOn[member]
  if bucketId then
    -- A job ahead of the class's first (a higher priority) moves the class up among the bucket's waiters.
    rcall('ZADD', waitersKey(queueBase, bucketId), 'XX', 'LT', order, member)
    noteWaiting(throttlePrefix, parseBucketId(bucketId), 1)
    rcall('HINCRBY', stateKey, 'blocked', 1)
  end
end

-- Ready jobs are read in chunks from the front and removed in one go at the end: this script is the
-- only one taking from the front while it runs.
local READ_CHUNK = 64
local readyChunk, readyAt, readyTaken = {}, 1, 0
local function jobHeadOf()
  if readyAt > #readyChunk then
    readyChunk = rcall('ZRANGE', readyJobsKey, readyTaken, readyTaken + READ_CHUNK - 1, 'WITHSCORES')
    readyAt = 1
  end
  if readyAt > #readyChunk then return nil end
  return readyChunk[readyAt], tonumber(readyChunk[readyAt + 1])
end
-- Classes wait on buckets rarely: with none waiting, no job's class needs looking up.
local anyWaiting = rcall('HLEN', classStateKey) > 0

local classHead = rcall('ZRANGE', readyClassesKey, 0, 0, 'WITHSCORES')
while not isPausedOrMaxed and #delivered < 2 * wanted and budget > 0 do
  if concurrency and rcall('LLEN', activeKey) >= concurrency then break end
  local entry, order = jobHeadOf()
  local fromJobs = entry ~= nil and (#classHead == 0 or order < tonumber(classHead[2]))
  if fromJobs then
    readyAt = readyAt + 2
    readyTaken = readyTaken + 1
    local hash = string.find(entry, '#', 1, true)
    local member, jobId = string.sub(entry, 1, hash - 1), string.sub(entry, hash + 1)
    local blockedOn = waitingOn[member]
    if blockedOn == nil then
      blockedOn = anyWaiting and rcall('HGET', classStateKey, member) or false
      waitingOn[member] = blockedOn
    end
    if blockedOn then
      file(member, jobId, order)
      budget = budget - 1
    else
      local counters, bucketsOrFull, fullAtUs = checkClass(member)
      if counters == 'stale' then
        file(member, jobId, order)
        rcall('SADD', staleKey, member)
        budget = budget - 1
      elseif counters == nil then
        file(member, jobId, order)
        wait(member, order, bucketsOrFull, fullAtUs)
        budget = budget - 1
      else
        deliver(jobId, counters, bucketsOrFull)
      end
    end
  else
    if #classHead == 0 then break end
    local member, order = classHead[1], tonumber(classHead[2])
    local classKey = classJobsKey(queueBase, member)
    local counters, bucketsOrFull, fullAtUs = checkClass(member)
    if counters == 'stale' then
      rcall('ZREM', readyClassesKey, member)
      rcall('SADD', staleKey, member)
      budget = budget - 1
    elseif counters == nil then
      rcall('ZREM', readyClassesKey, member)
      wait(member, order, bucketsOrFull, fullAtUs)
      budget = budget - 1
    else
      local popped = rcall('ZPOPMIN', classKey)
      if #popped > 0 then deliver(popped[1], counters, bucketsOrFull) end
      local head = rcall('ZRANGE', classKey, 0, 0, 'WITHSCORES')
      if #head == 0 then
        rcall('ZREM', readyClassesKey, member)
        rcall('SREM', classesKey, member)
      else
        rcall('ZADD', readyClassesKey, head[2], member)
      end
    end
    classHead = rcall('ZRANGE', readyClassesKey, 0, 0, 'WITHSCORES')
  end
end

if readyTaken > 0 then rcall('ZREMRANGEBYRANK', readyJobsKey, 0, readyTaken - 1) end
saveBucketCounters()
saveThrottleStats(throttlePrefix, nowMs)
if deliveredCount > 0 then rcall('HINCRBY', stateKey, 'held', -deliveredCount) end

local unclassified = 0
if not isPausedOrMaxed then unclassified = rcall('LLEN', waitKey) + rcall('ZCARD', prioritizedKey) end
local nextWakeMs, nextDelayedMs, stale = 0, 0, 0
if #delivered < 2 * wanted then
  -- Some asked in vain: say when to look again.
  nextWakeMs = tonumber(rcall('ZRANGE', wakeupsKey, 0, 0, 'WITHSCORES')[2]) or 0
  if budget <= 0 and (jobHeadOf() ~= nil or #classHead > 0) then nextWakeMs = nowMs end
  nextDelayedMs = math.floor(getNextDelayedTimestamp(delayedKey) or 0)
  stale = rcall('SCARD', staleKey)
end
local reply = { now, nextWakeMs, nextDelayedMs, unclassified, stale, dropped, gen, #delivered / 2 }
for _, value in ipairs(delivered) do reply[#reply + 1] = value end
return reply
