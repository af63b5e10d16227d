--[[
  Delivers the next jobs of a throttled queue: the first held jobs, in queue order across classes, whose
  every bucket has room; each delivery counts one token in every limit of every bucket it draws from and
  moves the job to active exactly as bullmq's moveToActive does (lock, `active` event, processedOn, ats).
  Jobs that cannot go stay held, untouched. A class refused by a full bucket waits on that bucket and is
  not looked at again until the bucket has room, so refused backlogs cost nothing per delivery.

  Input:
    KEYS[1]  wait                KEYS[8]  marker
    KEYS[2]  active              KEYS[9]  ready       (ZSET class -> head order)
    KEYS[3]  prioritized         KEYS[10] wakeups     (ZSET bucket id -> ms)
    KEYS[4]  events              KEYS[11] state       (HASH gen, held, ...)
    KEYS[5]  delayed             KEYS[12] classes     (SET)
    KEYS[6]  meta                KEYS[13] stale       (SET)
    KEYS[7]  pc
    ARGV[1]  bullmq key prefix of the queue ("bull:orders:")
    ARGV[2]  lockDuration (ms)   ARGV[3] worker name ('' for none)
    ARGV[4]  queue base of our keys     ARGV[5] throttle key prefix
    ARGV[6]  most refusals to spend     ARGV[7] leaseMs (h)
    ARGV[8]  K, then K lock tokens: up to K jobs are delivered, the i-th locked with the i-th token
    (test builds read one more trailing ARGV, a clock offset in ms)

  Class and bucket keys are composed from ARGV[5] and ARGV[6] (includes/schedulerKeys), as bullmq
  composes job keys from ARGV[1]: in Redis Cluster, give the queue a hash-tagged prefix such as {bull}.

  Output:
    { nowUs, nextWakeMs, nextDelayedMs, unclassified, stale, dropped, n, id_1, job_1, ..., id_n, job_n }
    nextWakeMs: when a full bucket next has room (0: none); nextDelayedMs: the next delayed job (0: none);
    unclassified: jobs in wait/prioritized not yet classified; stale: classes of an older generation;
    dropped: held ids whose job had been removed; job_i: the job hash as HGETALL pairs.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"
--- @include "includes/schedulerKeys"
--- @include "includes/bucketCounters"
--- @include "bullmq/includes/getQueueMetadata"
--- @include "bullmq/includes/getNextDelayedTimestamp"
--- @include "bullmq/includes/promoteDelayedJobs"
--- @include "bullmq/includes/prepareJobForProcessing"

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delayedKey, metaKey, pcKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local readyKey, wakeupsKey, stateKey, classesKey, staleKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local jobPrefix = ARGV[1]
local lockDuration = tonumber(ARGV[2])
local workerName = ARGV[3] ~= '' and ARGV[3] or nil
local queueBase, throttlePrefix = ARGV[4], ARGV[5]
local maxRefusals, leaseMs = tonumber(ARGV[6]), tonumber(ARGV[7])
local maxDeliveries = tonumber(ARGV[8])

local now = nowUs()
local nowMs = math.floor(now / 1000)

local isPausedOrMaxed = getQueueMetadata(metaKey, activeKey, waitKey)
promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey, eventsKey, jobPrefix, nowMs, pcKey, isPausedOrMaxed)

-- Buckets whose room has come back: hand as many of their waiting classes back as they have room for.
local WAKE_BATCH_MAX = 64
local due = rcall('ZRANGEBYSCORE', wakeupsKey, '-inf', nowMs, 'LIMIT', 0, 8)
for _, bucketId in ipairs(due) do
  local bucket = parseBucketId(bucketId)
  local counters = bucketCounters(throttlePrefix, bucket, now)
  local room = WAKE_BATCH_MAX
  if counters then room = bucketRoom(counters) end
  local waiting = waitersKey(queueBase, bucketId)
  if room > 0 then
    if room > WAKE_BATCH_MAX then room = WAKE_BATCH_MAX end
    local woken = rcall('ZPOPMIN', waiting, room)
    for i = 1, #woken, 2 do rcall('ZADD', readyKey, woken[i + 1], woken[i]) end
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
local delivered, refusals, dropped = {}, 0, 0

local function reposition(member, classKey)
  local head = rcall('ZRANGE', classKey, 0, 0, 'WITHSCORES')
  if #head == 0 then
    rcall('ZREM', readyKey, member)
    rcall('SREM', classesKey, member)
  else
    rcall('ZADD', readyKey, head[2], member)
  end
end

while not isPausedOrMaxed and #delivered < 2 * maxDeliveries and refusals < maxRefusals do
  if concurrency and rcall('LLEN', activeKey) >= concurrency then break end
  local head = rcall('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
  if #head == 0 then break end
  local member, order = head[1], head[2]
  local memberGen, buckets = parseClass(member)
  local counters, fullBucket, fullAtUs, stale = {}, nil, 0, memberGen ~= gen
  for _, bucket in ipairs(buckets) do
    if stale then break end
    local own = bucketCounters(throttlePrefix, bucket, now)
    if own == nil then
      stale = true
    else
      for _, counter in ipairs(own) do counters[#counters + 1] = counter end
      local roomAt = bucketRoomAtUs(own)
      if roomAt > fullAtUs then fullAtUs, fullBucket = roomAt, bucket end
    end
  end
  if stale then
    rcall('ZREM', readyKey, member)
    rcall('SADD', staleKey, member)
  elseif fullBucket then
    rcall('ZREM', readyKey, member)
    rcall('ZADD', waitersKey(queueBase, fullBucket.id), order, member)
    rcall('ZADD', wakeupsKey, math.ceil(fullAtUs / 1000), fullBucket.id)
    refusals = refusals + 1
  else
    local classKey = classJobsKey(queueBase, member)
    local popped = rcall('ZPOPMIN', classKey)
    if #popped > 0 then
      local jobId = popped[1]
      rcall('HINCRBY', stateKey, 'held', -1)
      if rcall('EXISTS', jobPrefix .. jobId) == 0 then
        dropped = dropped + 1
      else
        for _, counter in ipairs(counters) do addToken(counter, now, leaseMs) end
        rcall('LPUSH', activeKey, jobId)
        local lockOpts = { token = ARGV[8 + #delivered / 2 + 1], lockDuration = lockDuration, name = workerName }
        local prepared = prepareJobForProcessing(jobPrefix, nil, eventsKey, jobId, nowMs, nil, nil, markerKey, lockOpts)
        delivered[#delivered + 1] = jobId
        delivered[#delivered + 1] = prepared[1]
      end
    end
    reposition(member, classKey)
  end
end

saveBucketCounters()

local unclassified = 0
if not isPausedOrMaxed then unclassified = rcall('LLEN', waitKey) + rcall('ZCARD', prioritizedKey) end
local nextWakeMs, nextDelayedMs, stale = 0, 0, 0
if #delivered < 2 * maxDeliveries then
  -- Some asked in vain: say when to look again.
  nextWakeMs = tonumber(rcall('ZRANGE', wakeupsKey, 0, 0, 'WITHSCORES')[2]) or 0
  nextDelayedMs = math.floor(getNextDelayedTimestamp(delayedKey) or 0)
  stale = rcall('SCARD', staleKey)
end
local reply = { now, nextWakeMs, nextDelayedMs, unclassified, stale, dropped, #delivered / 2 }
for _, value in ipairs(delivered) do reply[#reply + 1] = value end
return reply
