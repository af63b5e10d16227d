--[[
  Puts a queue's held jobs back where bullmq keeps waiting jobs, once no live worker declares throttles on
  the queue: priority 0 jobs into wait (or, on bullmq 5, the paused list of a paused queue: the line's
  waitingListOf, includes/bullmq5/queueLists), the others into
  prioritized, scored exactly as bullmq scores a new job (addJobWithPriority: priority * 2^32 + the queue's
  pc counter). Job hashes (data, opts, stored attributes `tha`) are left as they are. bullmq's marker is
  added (unless the queue is paused or maxed) so that blocked plain workers wake.

  One call moves at most ARGV[5] jobs, so that a large backlog never blocks Redis in one script; the caller
  calls again until the reply says done. The order in which bullmq would have delivered the jobs is kept:
    1. jobs in intake (taken for classification, their worker gone or about to place them) join ready-jobs,
       ordered after the held jobs as classifyJobs would order them, under a class of no generation
       ('released/*': should a worker start meanwhile, it classifies them again, as any stale class);
    2. class lists (full buckets, woken classes, classes of an old config generation) are merged into
       ready-jobs, and their classes stop waiting on their buckets;
    3. only once nothing is left but ready-jobs: its priority 0 jobs go to wait from the back (each RPUSHed
       to wait's head, the first in order last, so that it is the first taken), its other jobs to
       prioritized from the front (so that pc counts up in queue order).
  Held jobs stay counted in the state's `held` (intake in ZCARD intake) until they are in bullmq's lists, so
  queue.getJobCounts() plus getThrottledCount's `throttled` accounts for every job after each call.
  When nothing is held any more, the queue's scheduler keys go (its published config and generation with
  the state hash), so that nothing treats the queue as throttled afterwards.

  Every call first looks for a live ThrottledWorker of the queue in its workers set (a worker whose lapse
  time is later than now; each worker refreshes its entry with its declarations, see publishQueueConfig):
  while one exists, nothing is moved. A worker that registers between two calls therefore
  finds the jobs either still held (and delivers them) or back in wait (and classifies them again).

  Input:
    KEYS[1]  wait           KEYS[7]  state          KEYS[14] stale
    KEYS[2]  prioritized    KEYS[8]  intake         KEYS[15] removed-held
    KEYS[3]  meta           KEYS[9]  ready-jobs     KEYS[16] wakeups
    KEYS[4]  active         KEYS[10] classes        KEYS[17] workers (ZSET worker id -> lapse ms)
    KEYS[5]  pc             KEYS[11] class-state
    KEYS[6]  marker         KEYS[12] ready-classes
                            KEYS[13] blocked-since
    ARGV[1]  bullmq key prefix of the queue ("bull:orders:")   ARGV[2] queue base of our keys
    ARGV[3]  most jobs to move in this call
    (test builds read one more trailing ARGV, a clock offset in ms)

  Class keys are composed from ARGV[2] (includes/schedulerKeys): every key is in the queue's own slot.

  Output:
    { status, released, left }: status 1 = done (nothing held any more), 0 = call again, -1 = a live
    worker declares throttles on the queue (nothing was moved); released: jobs put back in this call;
    left: jobs still held or in intake.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/throttleStatsNotes"
--- @include "includes/jobOrder"
--- @include "bullmqLine/queueLists"
--- @include "bullmq/includes/isQueuePausedOrMaxed"
--- @include "bullmq/includes/addBaseMarkerIfNeeded"
--- @include "bullmq/includes/addJobWithPriority"

local waitKey, prioritizedKey, metaKey, activeKey, pcKey, markerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local stateKey, intakeKey, readyJobsKey, classesKey, classStateKey = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local readyClassesKey, blockedSinceKey, staleKey, removedHeldKey, wakeupsKey = KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16]
local workersKey = KEYS[17]
local jobPrefix, queueBase = ARGV[1], ARGV[2]
local budget = tonumber(ARGV[3])

-- Held jobs left (with intake), after this call's moves.
local function left()
  return math.max(0, tonumber(rcall('HGET', stateKey, 'held') or 0)) + rcall('ZCARD', intakeKey)
end

-- Commands take at most this many arguments from one unpack (Lua's C stack is limited).
local CHUNK = 500
local function inChunks(command, key, items)
  for i = 1, #items, CHUNK do
    rcall(command, key, unpack(items, i, math.min(i + CHUNK - 1, #items)))
  end
end

local nowMs = math.floor(nowUs() / 1000)
if #rcall('ZRANGEBYSCORE', workersKey, '(' .. intArg(nowMs), '+inf', 'LIMIT', 0, 1) > 0 then return { -1, 0, left() } end

local moves = 0
-- held goes up as intake jobs join ready-jobs and down as held jobs leave; stored once at the end.
local heldDelta = 0
-- The members of ready-jobs are "<class>#<job id>"; encoded names never hold '#'.
local RELEASED_CLASS = 'released/*'

-- A job whose hash is gone was removed from outside: forgetRemovedJobs may not have seen its event yet, and
-- finds it in removed-held when it does (so that it is not counted out twice).
local function forgetGone(jobId)
  rcall('SADD', removedHeldKey, jobId)
end

-- 1. intake -> ready-jobs, in the order the jobs had in bullmq's lists as far as their hashes tell
local intake = rcall('ZRANGE', intakeKey, 0, budget - 1, 'WITHSCORES')
if #intake > 0 then
  local jobs, ids = {}, {}
  for i = 1, #intake, 2 do
    local jobId = intake[i]
    ids[#ids + 1] = jobId
    if rcall('EXISTS', jobPrefix .. jobId) == 0 then
      forgetGone(jobId)
    else
      local fields = rcall('HMGET', jobPrefix .. jobId, 'priority', 'opts', 'timestamp')
      local lifo = false
      if fields[2] then
        local ok, opts = pcall(cjson.decode, fields[2])
        lifo = ok and type(opts) == 'table' and opts.lifo == true
      end
      jobs[#jobs + 1] = { id = jobId, lease = tonumber(intake[i + 1]), priority = tonumber(fields[1]) or 0,
        lifo = lifo, at = tonumber(fields[3]) or 0, number = tonumber(jobId) }
    end
  end
  -- One intake takes a run of jobs from the head of wait, all with one lease: within it, the hashes' priority,
  -- lifo flag, creation time and (numeric) id say the order.
  table.sort(jobs, function(a, b)
    if a.lease ~= b.lease then return a.lease < b.lease end
    if a.priority ~= b.priority then return a.priority < b.priority end
    if a.lifo ~= b.lifo then return a.lifo end
    if a.at ~= b.at then
      if a.lifo then return a.at > b.at end
      return a.at < b.at
    end
    if a.number and b.number and a.number ~= b.number then return a.number < b.number end
    return a.id < b.id
  end)
  local fifoCount, lifoCount = 0, 0
  for _, job in ipairs(jobs) do
    if job.lifo then lifoCount = lifoCount + 1 else fifoCount = fifoCount + 1 end
  end
  local fifoNext = fifoCount > 0 and rcall('HINCRBY', stateKey, 'fifo', fifoCount) - fifoCount or 0
  -- lifo counts down in order: the first of them takes the highest number.
  local lifoNext = lifoCount > 0 and rcall('HINCRBY', stateKey, 'lifo', lifoCount) + 1 or 0
  local ready = {}
  for _, job in ipairs(jobs) do
    local order
    if job.lifo then
      lifoNext = lifoNext - 1
      order = jobOrder(job.priority, true, lifoNext)
    else
      fifoNext = fifoNext + 1
      order = jobOrder(job.priority, false, fifoNext)
    end
    ready[#ready + 1] = intArg(order)
    ready[#ready + 1] = RELEASED_CLASS .. '#' .. job.id
  end
  inChunks('ZREM', intakeKey, ids)
  if #ready > 0 then inChunks('ZADD', readyJobsKey, ready) end
  heldDelta = heldDelta + #jobs
  moves = moves + #ids
end

-- 2. class lists -> ready-jobs; a class whose list empties stops waiting and leaves every index
while moves < budget do
  local members = rcall('SRANDMEMBER', classesKey, 16)
  if #members == 0 then break end
  for _, member in ipairs(members) do
    if moves >= budget then break end
    local classKey = classJobsKey(queueBase, member)
    local popped = rcall('ZPOPMIN', classKey, budget - moves)
    local ready = {}
    local _, classBuckets = parseClass(member)
    for j = 1, #popped, 2 do
      statsNotes.ended(queueBase, member, popped[j], classBuckets, nil)
      -- A job removed from outside and already uncounted (forgetRemovedJobs) is simply let go.
      if rcall('SREM', removedHeldKey, popped[j]) == 0 then
        ready[#ready + 1] = popped[j + 1]
        ready[#ready + 1] = member .. '#' .. popped[j]
      end
    end
    if #ready > 0 then inChunks('ZADD', readyJobsKey, ready) end
    local taken = #popped / 2
    moves = moves + taken
    local waitedOn = rcall('HGET', classStateKey, member)
    if waitedOn and taken > 0 then
      -- No longer held by that full bucket: they count as held jobs that are not waiting.
      statsNotes.waiting(queueBase, parseBucketId(waitedOn), -taken)
      rcall('HINCRBY', stateKey, 'blocked', -taken)
    end
    if rcall('EXISTS', classKey) == 0 then
      rcall('SREM', classesKey, member)
      rcall('SREM', staleKey, member)
      rcall('ZREM', readyClassesKey, member)
      rcall('HDEL', classStateKey, member)
      rcall('ZREM', blockedSinceKey, member)
      local _, buckets = parseClass(member)
      for _, bucket in ipairs(buckets) do
        local waiters = waitersKey(queueBase, bucket.id)
        rcall('ZREM', waiters, member)
        if rcall('EXISTS', waiters) == 0 then rcall('ZREM', wakeupsKey, bucket.id) end
      end
    end
  end
end

-- 3. ready-jobs -> bullmq's lists, once it holds every held job
local released = 0
if moves < budget and rcall('ZCARD', intakeKey) == 0 and rcall('SCARD', classesKey) == 0 then
  local target = waitingListOf(metaKey, waitKey, jobPrefix)
  local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)
  local PRIORITIZED_FROM = intArg(0x100000000)
  local room = budget - moves
  local back = rcall('ZREVRANGEBYSCORE', readyJobsKey, '(' .. PRIORITIZED_FROM, '-inf', 'LIMIT', 0, room)
  local front = {}
  if #back < room then front = rcall('ZRANGEBYSCORE', readyJobsKey, PRIORITIZED_FROM, '+inf', 'LIMIT', 0, room - #back) end
  local toWait = 0
  local function release(entry)
    local jobId = string.sub(entry, string.find(entry, '#', 1, true) + 1)
    if rcall('SREM', removedHeldKey, jobId) == 1 then return end
    heldDelta = heldDelta - 1
    if rcall('EXISTS', jobPrefix .. jobId) == 0 then return forgetGone(jobId) end
    local priority = tonumber(rcall('HGET', jobPrefix .. jobId, 'priority')) or 0
    if priority > 0 then
      addJobWithPriority(markerKey, prioritizedKey, priority, jobId, pcKey, pausedOrMaxed)
    else
      rcall('RPUSH', target, jobId)
      toWait = toWait + 1
    end
    released = released + 1
  end
  for _, entry in ipairs(back) do release(entry) end
  for _, entry in ipairs(front) do release(entry) end
  if #back > 0 then inChunks('ZREM', readyJobsKey, back) end
  if #front > 0 then inChunks('ZREM', readyJobsKey, front) end
  if toWait > 0 then addBaseMarkerIfNeeded(markerKey, pausedOrMaxed) end
  moves = moves + #back + #front
end
if heldDelta ~= 0 then rcall('HINCRBY', stateKey, 'held', heldDelta) end

if rcall('ZCARD', intakeKey) > 0 or rcall('SCARD', classesKey) > 0 or rcall('ZCARD', readyJobsKey) > 0 then
  return { 0, released, left() }
end
-- Nothing held: what is left only indexes classes and buckets (a full bucket's waiters, its wake-up time).
if moves >= budget then return { 0, released, 0 } end
local wakeups = rcall('ZRANGE', wakeupsKey, 0, budget - moves - 1)
for _, bucketId in ipairs(wakeups) do rcall('DEL', waitersKey(queueBase, bucketId)) end
if #wakeups > 0 then inChunks('ZREM', wakeupsKey, wakeups) end
if rcall('EXISTS', wakeupsKey) == 1 then return { 0, released, 0 } end
rcall('DEL', stateKey, classStateKey, readyClassesKey, blockedSinceKey, staleKey, removedHeldKey, workersKey)
return { 1, released, 0 }
