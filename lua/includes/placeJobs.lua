--[[
  Where a delivery call puts a job it looks at (includes/takeJobsBody): delivered when every bucket of its
  class has room, else filed into its class's own list, the class waiting on one bucket (class-state, the
  bucket's waiters, wakeups; includes/wakeDueBuckets wakes it). A class waits on the bucket whose room comes
  back last: woken sooner, it would find another still full and wait again. The jobs of a waiting class that
  come up later follow it into its list without a look at its buckets: the class waits, not each job.
  Needs rcall, bullmq's prepareJobForProcessing and getRateLimitTTL, and the room source (roomSource,
  roomReturnsAtUs, spendRoom, noteBlocked, roomTicketing: see includes/takeJobsBody). Each function is
  passed the call's input (includes/takeJobsInput) and the run's state (run, includes/takeJobsBody's
  takeJobs) it reads and counts in. Defines placeJobs: checkBuckets, checkClass, deliver, wait, file,
  readAnyWaiting and waitingOnOf (fields, not locals: a script's main chunk holds at most 200).
]]
--- @include "intArg"
--- @include "schedulerKeys"
--- @include "throttleStatsNotes"
--- @include "jobOrder"
--- @include "fairness"

local placeJobs = {}

-- true and the buckets when every one has room, or nil and the bucket to wait on (with when it has
-- room; the one whose room comes last), or 'stale' (checkClass: a class of an older generation).
-- A throttle whose limits are not there (its node lost them and nobody has published them again yet, or no
-- live worker declares it any more) holds the class as a full bucket would, looked at again a second later:
-- the workers publish the limits again with their next registration, and a class whose throttles changed
-- meanwhile is then of an older generation (stale, reclaimed). Such a class marked stale while its generation
-- was still current was left in no list at all, its jobs held for good.
function placeJobs.checkBuckets(run, buckets)
  local fullBucket, fullAtUs = nil, 0
  for i = 1, #buckets do
    local source = roomSource(buckets[i])
    if source == nil then return nil, buckets[i], run.now + 1000000 end
    local roomAt = roomReturnsAtUs(source, buckets[i].cost)
    if roomAt > fullAtUs then fullAtUs, fullBucket = roomAt, buckets[i] end
  end
  if fullBucket then return nil, fullBucket, fullAtUs end
  return true, buckets
end

function placeJobs.checkClass(run, member)
  local memberGen, buckets = parseClass(member)
  if memberGen ~= run.gen then return 'stale' end
  return placeJobs.checkBuckets(run, buckets)
end

-- held: the job was counted as held (it comes from ready-jobs or a class), not straight from wait;
-- inActive: it is at the head of active already. order: its place in line (nil: it went at once, none given);
-- group: its fairness group when known (a fresh job's), else read from its fields (includes/fairness).
function placeJobs.deliver(input, run, jobId, buckets, held, inActive, order, group)
  if held and placeJobs.removedWhileHeld(input, run, jobId) then return false end
  if held then run.heldLeft = run.heldLeft + 1 end
  for i = 1, #buckets do
    -- Loaded by checkBuckets: this finds it in the room source's cache.
    spendRoom(roomSource(buckets[i]), not held, jobId, buckets[i].cost)
    statsNotes.delivered(buckets[i])
  end
  roomTicketing.delivered(jobId)
  placeJobs.intoActive(input, run, jobId, inActive, run.limiterMax)
  if run.fair then fairness.delivered(run.fair, order, ORDER_SPAN, fairness.costOf(buckets), group, run.reply[run.REPLY_HEAD + 2 * run.delivered]) end
  -- bullmq's limiter took this delivery: once full, nothing more goes.
  if run.limiterMax then run.rateLimitMs = getRateLimitTTL(run.limiterMax, input.limiterKey) end
  return true
end

-- Whether a held job was removed from outside (its hash gone): then it is dropped, no longer counted as held if
-- forgetRemovedJobs saw it go, else uncounted now.
function placeJobs.removedWhileHeld(input, run, jobId)
  if rcall('EXISTS', input.jobPrefix .. jobId) == 1 then return false end
  if rcall('SREM', input.removedHeldKey, jobId) == 0 then run.heldLeft = run.heldLeft + 1 end
  run.dropped = run.dropped + 1
  return true
end

-- Hands the job to the call's next slot through bullmq's prepareJobForProcessing (its lock, the active event,
-- processedOn), and puts it in the reply. limiterMax: bullmq's limiter counts it (nil: not).
function placeJobs.intoActive(input, run, jobId, inActive, limiterMax)
  if not inActive then rcall('LPUSH', input.activeKey, jobId) end
  local delivered, lockOpts = run.delivered, run.lockOpts
  lockOpts.token = run.tokens[delivered + 1]
  local prepared = prepareJobForProcessing(input.jobPrefix, input.limiterKey, input.eventsKey, jobId, run.nowMsArg, limiterMax, run.limiterMs, input.markerKey, lockOpts)
  local reply, at = run.reply, run.REPLY_HEAD + 2 * delivered
  reply[at + 1] = jobId
  reply[at + 2] = prepared[1]
  run.delivered = delivered + 1
end

-- A held job past its deadline (includes/deadlines): out of its class's list, delivered as any job is but counting
-- nothing in any bucket, and marked (its field thw: the slot's lock token and why) so that the worker fails it
-- before its processor. false when it had left its class meanwhile, or was removed.
function placeJobs.expire(input, run, member, jobId)
  local entry = member .. '#' .. jobId
  if rcall('ZREM', classJobsKey(input.queueBase, member), jobId) == 0 then
    deadlines.ended(input.queueBase, entry)
    return false
  end
  -- A class waiting on a full bucket counts its jobs there (a woken one no longer does: wakeDueBuckets).
  local bucketId = placeJobs.waitingOnOf(input, run, member)
  if bucketId then
    statsNotes.waiting(input.queueBase, parseBucketId(bucketId), -1)
    rcall('HINCRBY', input.stateKey, 'blocked', -1)
  end
  if rcall('EXISTS', classJobsKey(input.queueBase, member)) == 0 then
    -- Its last job: the class waits no more (a job of it coming later is looked at afresh, not filed behind a wait
    -- whose room, leased, may be asked for only when the class wakes).
    if bucketId then
      rcall('HDEL', input.classStateKey, member)
      rcall('ZREM', waitersKey(input.queueBase, bucketId), member)
      run.waitingOn[member] = false
    end
    rcall('ZREM', input.readyClassesKey, member)
    rcall('SREM', input.classesKey, member)
  end
  local why = deadlines.reason(input.queueBase, member, jobId, run.nowMs)
  local _, buckets = parseClass(member)
  statsNotes.ended(input.queueBase, member, jobId, buckets, nil)
  if placeJobs.removedWhileHeld(input, run, jobId) then return false end
  run.heldLeft = run.heldLeft + 1
  -- With the slot's lock token: only this delivery fails (a failed job retried later keeps the field).
  rcall('HSET', input.jobPrefix .. jobId, 'thw', run.tokens[run.delivered + 1] .. '|' .. why)
  roomTicketing.delivered(jobId)
  -- It is failed, not run: bullmq's limiter does not count it.
  placeJobs.intoActive(input, run, jobId, false, nil)
  return true
end

-- Expires the held jobs past their deadline, as many as the call has slots left (wanted in all) while bullmq's
-- concurrency (nil: none) allows.
function placeJobs.expireDue(input, run, wanted, concurrency)
  if concurrency and rcall('LLEN', input.activeKey) >= concurrency then return end
  for _, entry in ipairs(deadlines.due(input.queueBase, run.nowMs, wanted - run.delivered)) do
    local hash = string.find(entry, '#', 1, true)
    placeJobs.expire(input, run, string.sub(entry, 1, hash - 1), string.sub(entry, hash + 1))
  end
end

-- When the jobs of this queue waiting on the full bucket (this one last) could have gone by its limits (us), for a
-- job of a class with a maxWait (includes/deadlines); nil when none applies or the room source cannot say.
function placeJobs.estimateAtUs(input, member, bucket)
  if not deadlines.ofClass(input.queueBase, member) then return nil end
  local source = roomSource(bucket)
  if source == nil then return nil end
  local waiting = tonumber(rcall('ZSCORE', queueStatsBase(input.queueBase, bucket.name) .. ':waiting', bucket.bucket)) or 1
  return roomWaitAtUs(source, math.max(1, waiting) * (bucket.cost or 1))
end

-- filedJob: the job the caller filed into the class's list just before (it starts waiting now); a woken class
-- that waits again (false) brings no new ones.
function placeJobs.wait(input, run, member, order, bucket, atUs, filedJob)
  -- A waiting class is not ready: a woken one (in ready-classes) whose newer job, ahead of its head, was found not
  -- to fit waits from now on, and the head read before it is skipped (includes/takeJobsBody), else it waited
  -- twice and its held jobs counted twice in the queue's blocked figure and the bucket's waiting one.
  rcall('ZREM', input.readyClassesKey, member)
  rcall('HSET', input.classStateKey, member, bucket.id)
  rcall('ZADD', waitersKey(input.queueBase, bucket.id), intArg(order), member)
  -- In us: a worker waiting for room comes back within a ms of it only if it knows it to the us. An earlier
  -- time the bucket has stays: classes of other costs wait on it too, and a cheaper one may fit sooner.
  rcall('ZADD', input.wakeupsKey, 'LT', intArg(atUs), bucket.id)
  noteBlocked(member, order, bucket, atUs)
  local held = rcall('ZCARD', classJobsKey(input.queueBase, member))
  statsNotes.waiting(input.queueBase, bucket, held)
  if filedJob then statsNotes.started(input.queueBase, bucket, member, filedJob, run.nowMsArg, placeJobs.estimateAtUs(input, member, bucket)) end
  rcall('HINCRBY', input.stateKey, 'blocked', held)
  run.waitingOn[member] = bucket.id
  run.someWaiting = true
end

-- Moves a ready job into its class's own list (its class waits on a bucket, or is stale); the caller
-- removes it from ready-jobs.
function placeJobs.file(input, run, member, jobId, order)
  rcall('ZADD', classJobsKey(input.queueBase, member), intArg(order), jobId)
  rcall('SADD', input.classesKey, member)
  local bucketId = run.waitingOn[member]
  if bucketId then
    -- A job ahead of the class's first (a higher priority) moves the class up among the bucket's waiters.
    rcall('ZADD', waitersKey(input.queueBase, bucketId), 'XX', 'LT', intArg(order), member)
    local bucket = parseBucketId(bucketId)
    statsNotes.waiting(input.queueBase, bucket, 1)
    statsNotes.started(input.queueBase, bucket, member, jobId, run.nowMsArg, placeJobs.estimateAtUs(input, member, bucket))
    rcall('HINCRBY', input.stateKey, 'blocked', 1)
  end
end

-- Classes wait on buckets rarely: with none waiting, no job's class needs looking up (someWaiting turns
-- true once one waits in this run).
function placeJobs.readAnyWaiting(input, run)
  run.anyWaiting = rcall('HLEN', input.classStateKey) > 0
  run.someWaiting = run.anyWaiting
end

-- The bucket id the class waits on, or false: read once a run (run.waitingOn), and only if any class waits.
function placeJobs.waitingOnOf(input, run, member)
  local blockedOn = run.waitingOn[member]
  if blockedOn ~= nil then return blockedOn end
  if not run.anyWaiting then return false end
  blockedOn = rcall('HGET', input.classStateKey, member) or false
  run.waitingOn[member] = blockedOn
  return blockedOn
end
