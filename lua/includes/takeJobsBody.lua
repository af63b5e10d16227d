--[[
  The body of the delivery scripts (takeNextJobs, takeLeasedJobs): what the header of takeNextJobs-19.lua
  describes, with the room of each bucket asked of a room source the including script chose first:
    includes/exactRoom    the buckets' window counters, counted in this script (exact delivery)
    includes/leasedRoom   tokens leased from the throttle namespace's grantor, spent here (leased delivery)
  A room source defines initRoom(ctx), roomSource(bucket) (nil: its throttle's limits are not known, the
  class waits a second, checkBuckets), roomLeft(source), roomReturnsAtUs(source, cost) (0: room now for cost tokens, 1 when nil), spendRoom(source,
  fresh, jobId, cost), noteBlocked(member,
  order, bucket, atUs), freshJobTaken(jobId) (a job from wait, before its buckets are looked at), roomWakeAtUs(bucketId,
  atUs) (when a caller told to wait for the bucket's room at atUs should look again) and saveRoom(); and comingRoom: nil, or { soon(source, cost) (no room for cost, but tokens already
  asked for are due within moments: fresh jobs wait in bullmq's lists rather than be filed), lackedAlone(source)
  (a fresh job lacked room in this bucket only), askedSoon(member) (the waiting class's tokens are in
  the next lease round), lookAgain(source) (a due bucket with no room wakes its waiters all the same: the
  room the grantor named has come, and comes only once they are asked for) }.
  Needs, defined by the including script: rcall; `input`, the table of KEYS and ARGV that
  includes/takeJobsInput builds (waitKey ... refusedKey, jobPrefix ... K); includes nowUs, intArg, schedulerKeys,
  throttleStatsNotes, jobOrder, classifyInLua, bullmqLine/queueLists and bullmq's getNextDelayedTimestamp,
  promoteDelayedJobs, getRateLimitTTL and prepareJobForProcessing. Leaves the reply in `reply`.
]]
--- @include "slotTokens"
--- @include "wakeDueBuckets"

local tokens, refused = slotTokens(input)
local wanted = #tokens
-- Refusals and moves still to spend (the main loop's).
local budget = input.budget

local now = nowUs()
local nowMs = math.floor(now / 1000)
local nowMsArg = intArg(nowMs)
initRoom({ throttlePrefix = input.throttlePrefix, queueBase = input.queueBase, now = now, nowMs = nowMs, leaseMs = input.leaseMs, afterRestart = input.afterRestart, lateAfterUs = input.lateAfterUs, K = input.K })

-- targetKey: where promoted delayed jobs go (bullmq 5: the paused list while the queue is paused).
local targetKey, isPausedOrMaxed, rateLimitMax, rateLimitDuration = queueTargetList(input.metaKey, input.activeKey, input.waitKey, input.jobPrefix)
promoteDelayedJobs(input.delayedKey, input.markerKey, targetKey, input.prioritizedKey, input.eventsKey, input.jobPrefix, input.callerMs, input.pcKey, isPausedOrMaxed)
-- As bullmq's moveToActive reads them: the queue's global max before the worker's, the worker's
-- duration before the queue's.
local limiterMax = tonumber(rateLimitMax) or input.workerLimiterMax
local limiterMs = input.workerLimiterMs or tonumber(rateLimitDuration)
local rateLimitMs = getRateLimitTTL(limiterMax, input.limiterKey)

wakeDueBuckets(input, now)

local stateFields = rcall('HMGET', input.stateKey, 'gen', 'lua')
local gen = stateFields[1] or ''
local classSpec = gen == input.callerGen and parseClassSpec(stateFields[2]) or nil
local concurrency = tonumber(rcall('HGET', input.metaKey, 'concurrency'))
-- The reply is built as jobs go: its head is filled in at the end, refused slots and then jobs follow it.
local REPLY_HEAD = 11 + #refused
local reply = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, #refused }
for i = 1, #refused do reply[11 + i] = refused[i] end
-- delivered: jobs this call delivered; heldLeft: jobs counted as held that stopped being held in this call
-- (delivered, or removed and dropped); freshHeld: jobs straight from wait this call held.
local delivered, dropped, heldLeft, freshHeld = 0, 0, 0, 0
local waitingOn = {}
local someWaiting

-- true and the buckets when every one has room, or nil and the bucket to wait on (with when it has
-- room; the one whose room comes last), or 'stale' (checkClass: a class of an older generation).
-- A throttle whose limits are not there (its node lost them and nobody has published them again yet, or no
-- live worker declares it any more) holds the class as a full bucket would, looked at again a second later:
-- the workers publish the limits again with their next registration, and a class whose throttles changed
-- meanwhile is then of an older generation (stale, reclaimed). Such a class marked stale while its generation
-- was still current was left in no list at all, its jobs held for good.
local function checkBuckets(buckets)
  local fullBucket, fullAtUs = nil, 0
  for i = 1, #buckets do
    local source = roomSource(buckets[i])
    if source == nil then return nil, buckets[i], now + 1000000 end
    local roomAt = roomReturnsAtUs(source, buckets[i].cost)
    if roomAt > fullAtUs then fullAtUs, fullBucket = roomAt, buckets[i] end
  end
  if fullBucket then return nil, fullBucket, fullAtUs end
  return true, buckets
end

local function checkClass(member)
  local memberGen, buckets = parseClass(member)
  if memberGen ~= gen then return 'stale' end
  return checkBuckets(buckets)
end

local lockOpts = { lockDuration = input.lockDuration, name = input.workerName }

-- held: the job was counted as held (it comes from ready-jobs or a class), not straight from wait;
-- inActive: it is at the head of active already.
local function deliver(jobId, buckets, held, inActive)
  if held and rcall('EXISTS', input.jobPrefix .. jobId) == 0 then
    -- Removed while held: no longer counted if forgetRemovedJobs saw it go, else uncounted now.
    if rcall('SREM', input.removedHeldKey, jobId) == 0 then heldLeft = heldLeft + 1 end
    dropped = dropped + 1
    return false
  end
  if held then heldLeft = heldLeft + 1 end
  for i = 1, #buckets do
    -- Loaded by checkBuckets: this finds it in the room source's cache.
    spendRoom(roomSource(buckets[i]), not held, jobId, buckets[i].cost)
    statsNotes.delivered(buckets[i])
  end
  roomTicketing.delivered(jobId)
  if not inActive then rcall('LPUSH', input.activeKey, jobId) end
  lockOpts.token = tokens[delivered + 1]
  local prepared = prepareJobForProcessing(input.jobPrefix, input.limiterKey, input.eventsKey, jobId, nowMsArg, limiterMax, limiterMs, input.markerKey, lockOpts)
  reply[REPLY_HEAD + 2 * delivered + 1] = jobId
  reply[REPLY_HEAD + 2 * delivered + 2] = prepared[1]
  delivered = delivered + 1
  -- bullmq's limiter took this delivery: once full, nothing more goes.
  if limiterMax then rateLimitMs = getRateLimitTTL(limiterMax, input.limiterKey) end
  return true
end

-- filedJob: the job the caller filed into the class's list just before (it starts waiting now); a woken class
-- that waits again (false) brings no new ones.
local function wait(member, order, bucket, atUs, filedJob)
  rcall('HSET', input.classStateKey, member, bucket.id)
  rcall('ZADD', waitersKey(input.queueBase, bucket.id), intArg(order), member)
  -- In us: a worker waiting for room comes back within a ms of it only if it knows it to the us. An earlier
  -- time the bucket has stays: classes of other costs wait on it too, and a cheaper one may fit sooner.
  rcall('ZADD', input.wakeupsKey, 'LT', intArg(atUs), bucket.id)
  noteBlocked(member, order, bucket, atUs)
  local held = rcall('ZCARD', classJobsKey(input.queueBase, member))
  statsNotes.waiting(input.queueBase, bucket, held)
  if filedJob then statsNotes.started(input.queueBase, bucket, member, filedJob, nowMsArg) end
  rcall('HINCRBY', input.stateKey, 'blocked', held)
  waitingOn[member] = bucket.id
  someWaiting = true
end

-- Moves a ready job into its class's own list (its class waits on a bucket, or is stale); the caller
-- removes it from ready-jobs.
local function file(member, jobId, order)
  rcall('ZADD', classJobsKey(input.queueBase, member), intArg(order), jobId)
  rcall('SADD', input.classesKey, member)
  local bucketId = waitingOn[member]
  if bucketId then
    -- A job ahead of the class's first (a higher priority) moves the class up among the bucket's waiters.
    rcall('ZADD', waitersKey(input.queueBase, bucketId), 'XX', 'LT', intArg(order), member)
    local bucket = parseBucketId(bucketId)
    statsNotes.waiting(input.queueBase, bucket, 1)
    statsNotes.started(input.queueBase, bucket, member, jobId, nowMsArg)
    rcall('HINCRBY', input.stateKey, 'blocked', 1)
  end
end

-- Ready jobs are read in chunks from the front and removed in one go at the end: this script is the
-- only one taking from the front while it runs.
local READ_CHUNK = 64
-- Most jobs straight from wait one call may hold (their buckets full) before handing over to the next.
local FRESH_BUDGET = 256
local readyChunk, readyAt, readyTaken, readyEnded = {}, 1, 0, false
local function jobHeadOf()
  if readyAt > #readyChunk and not readyEnded then
    readyChunk = rcall('ZRANGE', input.readyJobsKey, readyTaken, readyTaken + READ_CHUNK - 1, 'WITHSCORES')
    readyAt = 1
    -- Nothing adds to ready-jobs while this runs: a short chunk is the last.
    readyEnded = #readyChunk < 2 * READ_CHUNK
  end
  if readyAt > #readyChunk then return nil end
  return readyChunk[readyAt], tonumber(readyChunk[readyAt + 1])
end
-- Classes wait on buckets rarely: with none waiting, no job's class needs looking up (someWaiting turns
-- true once one waits in this run).
local anyWaiting = rcall('HLEN', input.classStateKey) > 0
someWaiting = anyWaiting

local function waitingOnOf(member)
  local blockedOn = waitingOn[member]
  if blockedOn ~= nil then return blockedOn end
  if not anyWaiting then return false end
  blockedOn = rcall('HGET', input.classStateKey, member) or false
  waitingOn[member] = blockedOn
  return blockedOn
end

-- The first job of wait (then prioritized) that no worker has classified, classified here; nil when
-- there is none, or it needs the worker's classifier (deferred), or this queue's throttles do.
local fresh, freshEnded, deferred = nil, classSpec == nil, false
local freshBudget = FRESH_BUDGET
-- comesFirst: nothing held is ahead of it, so it is taken straight into active (one command, as bullmq's
-- moveToActive does) and put back should it not go.
local function freshHead(comesFirst)
  if fresh or freshEnded then return fresh end
  if freshBudget <= 0 then
    freshEnded = true
    return nil
  end
  local jobId, from
  if comesFirst then
    jobId, from = rcall('RPOPLPUSH', input.waitKey, input.activeKey), 'active'
  else
    jobId, from = rcall('LINDEX', input.waitKey, -1), 'wait'
  end
  if not jobId then jobId, from = rcall('ZRANGE', input.prioritizedKey, 0, 0)[1], 'prioritized' end
  if not jobId then
    freshEnded = true
    return nil
  end
  -- A job without a hash (removed) is the worker's classifier's to let go. (Every job hash has data.)
  local name, dataText, found
  if classSpec.needsName then
    local fields = rcall('HMGET', input.jobPrefix .. jobId, 'name', 'data')
    name, dataText = fields[1], fields[2]
    found = name and dataText
  else
    dataText = rcall('HGET', input.jobPrefix .. jobId, 'data')
    found = dataText
  end
  local buckets
  if found then buckets = classifyInLua(classSpec, name, dataText) end
  if buckets == nil then
    if from == 'active' then
      rcall('LREM', input.activeKey, 1, jobId)
      rcall('RPUSH', input.waitKey, jobId)
    end
    freshEnded, deferred = true, true
    return nil
  end
  -- A job in wait is no longer in flight: an earlier delivery of it that ended unreleased stops counting now.
  freshJobTaken(jobId)
  fresh = { id = jobId, buckets = buckets, from = from, member = false, putBack = false }
  return fresh
end

local function memberOf(job)
  if not job.member then job.member = classMember(gen, job.buckets) end
  return job.member
end

-- Jobs their worker put back (lua/markPutBack-2.lua) go first among their priority, as lifo jobs do. Whether
-- the queue has any is read once a run, when a fresh job first needs it. (One local: the main chunk is near 200.)
local putBack = { key = input.putBackKey, exists = nil }
function putBack.any()
  if putBack.exists == nil then putBack.exists = rcall('EXISTS', putBack.key) == 1 end
  return putBack.exists
end
function putBack.has(jobId)
  return putBack.any() and rcall('SISMEMBER', putBack.key, jobId) == 1
end
-- Takes the job's mark: whether it had one.
function putBack.take(jobId)
  return putBack.any() and rcall('SREM', putBack.key, jobId) == 1
end

-- Sequence numbers handed out this run (see includes/jobOrder), stored once at the end.
local sequences
local function freshOrder(job)
  if job.order then return job.order end
  if sequences == nil then
    local stored = rcall('HMGET', input.stateKey, 'fifo', 'lifo')
    sequences = { fifo = tonumber(stored[1]) or 0, lifo = tonumber(stored[2]) or 0, fifoUsed = 0, lifoUsed = 0 }
  end
  -- Read only now: a job that goes at once needs neither.
  local stored = rcall('HMGET', input.jobPrefix .. job.id, 'priority', 'opts')
  local lifo = false
  if stored[2] then
    local ok, opts = pcall(cjson.decode, stored[2])
    lifo = ok and type(opts) == 'table' and opts.lifo == true
  end
  local priority = tonumber(stored[1]) or 0
  if lifo or job.putBack or putBack.has(job.id) then
    sequences.lifoUsed = sequences.lifoUsed + 1
    job.order = jobOrder(priority, true, sequences.lifo + sequences.lifoUsed)
  else
    sequences.fifoUsed = sequences.fifoUsed + 1
    job.order = jobOrder(priority, false, sequences.fifo + sequences.fifoUsed)
  end
  return job.order
end

local function takeFresh()
  local job = fresh
  fresh = nil
  -- Its mark goes as it is taken; its order may be worked out after (when it is held).
  if putBack.take(job.id) then job.putBack = true end
  if job.from == 'prioritized' then
    rcall('ZREM', input.prioritizedKey, job.id)
  elseif job.from == 'wait' then
    rcall('RPOP', input.waitKey)
  end
  return job
end

-- A fresh job that lacks room only in buckets whose room is on its way (includes/leasedRoom: a flowing
-- pool that ran dry, its refill asked for) stays first in bullmq's list, and fresh intake ends.
local comingBackUs = 0
local function roomIsComing(job)
  if not comingRoom then return false end
  if someWaiting and waitingOnOf(memberOf(job)) and not comingRoom.askedSoon(memberOf(job)) then return false end
  local lacking, costs = {}, {}
  for i = 1, #job.buckets do
    local source = roomSource(job.buckets[i])
    if source == nil then return false end
    if roomReturnsAtUs(source, job.buckets[i].cost) > 0 then
      lacking[#lacking + 1] = source
      costs[#lacking] = job.buckets[i].cost
    end
  end
  if #lacking == 0 then return false end
  if #lacking == 1 then comingRoom.lackedAlone(lacking[1]) end
  for i = 1, #lacking do
    if not comingRoom.soon(lacking[i], costs[i]) then return false end
  end
  if job.from == 'active' then
    rcall('LREM', input.activeKey, 1, job.id)
    rcall('RPUSH', input.waitKey, job.id)
  end
  -- The deposit wakes the slots; this is in case it never comes.
  comingBackUs = now + 20000
  return true
end

-- A job straight from wait: delivered when its buckets have room, else held in its class.
local function placeFresh(job)
  local blockedOn = someWaiting and waitingOnOf(memberOf(job))
  local fits, bucketsOrFull, fullAtUs
  if not blockedOn then
    fits, bucketsOrFull, fullAtUs = checkBuckets(job.buckets)
    if fits == true then
      deliver(job.id, bucketsOrFull, false, job.from == 'active')
      return
    end
  end
  local member = memberOf(job)
  if job.from == 'active' then rcall('LREM', input.activeKey, 1, job.id) end
  freshHeld = freshHeld + 1
  freshBudget = freshBudget - 1
  file(member, job.id, freshOrder(job))
  if fits == 'stale' then
    rcall('SADD', input.staleKey, member)
  elseif not blockedOn then
    wait(member, freshOrder(job), bucketsOrFull, fullAtUs, job.id)
  end
end

local classHead = rcall('ZRANGE', input.readyClassesKey, 0, 0, 'WITHSCORES')
while not isPausedOrMaxed and rateLimitMs == 0 and delivered < wanted and budget > 0 do
  if concurrency and rcall('LLEN', input.activeKey) >= concurrency then break end
  local entry, order = jobHeadOf()
  local classOrder = #classHead > 0 and tonumber(classHead[2]) or nil
  local job = freshHead(entry == nil and classOrder == nil)
  local fromFresh = job ~= nil
  if fromFresh and (entry ~= nil or classOrder ~= nil) then
    local first = freshOrder(job)
    fromFresh = (entry == nil or first < order) and (classOrder == nil or first < classOrder)
  end
  local fromJobs = not fromFresh and entry ~= nil and (classOrder == nil or order < classOrder)
  if fromFresh and roomIsComing(job) then
    fresh, freshEnded = nil, true
  elseif fromFresh then
    placeFresh(takeFresh())
  elseif fromJobs then
    readyAt = readyAt + 2
    readyTaken = readyTaken + 1
    local hash = string.find(entry, '#', 1, true)
    local member, jobId = string.sub(entry, 1, hash - 1), string.sub(entry, hash + 1)
    local blockedOn = waitingOnOf(member)
    if blockedOn then
      file(member, jobId, order)
      budget = budget - 1
    else
      local fits, bucketsOrFull, fullAtUs = checkClass(member)
      if fits == 'stale' then
        file(member, jobId, order)
        rcall('SADD', input.staleKey, member)
        budget = budget - 1
      elseif fits == nil then
        file(member, jobId, order)
        wait(member, order, bucketsOrFull, fullAtUs, jobId)
        budget = budget - 1
      else
        deliver(jobId, bucketsOrFull, true)
      end
    end
  else
    if #classHead == 0 then break end
    local member, order = classHead[1], tonumber(classHead[2])
    local classKey = classJobsKey(input.queueBase, member)
    local fits, bucketsOrFull, fullAtUs = checkClass(member)
    if fits == 'stale' then
      rcall('ZREM', input.readyClassesKey, member)
      rcall('SADD', input.staleKey, member)
      budget = budget - 1
    elseif fits == nil then
      rcall('ZREM', input.readyClassesKey, member)
      wait(member, order, bucketsOrFull, fullAtUs, false)
      budget = budget - 1
    else
      local popped = rcall('ZPOPMIN', classKey)
      if #popped > 0 then
        local went = deliver(popped[1], bucketsOrFull, true)
        statsNotes.ended(input.queueBase, member, popped[1], bucketsOrFull, went and nowMs)
      end
      local head = rcall('ZRANGE', classKey, 0, 0, 'WITHSCORES')
      if #head == 0 then
        rcall('ZREM', input.readyClassesKey, member)
        rcall('SREM', input.classesKey, member)
      else
        rcall('ZADD', input.readyClassesKey, head[2], member)
      end
    end
    classHead = rcall('ZRANGE', input.readyClassesKey, 0, 0, 'WITHSCORES')
  end
end

if readyTaken > 0 then rcall('ZREMRANGEBYRANK', input.readyJobsKey, 0, readyTaken - 1) end
saveRoom()
if freshHeld ~= heldLeft then rcall('HINCRBY', input.stateKey, 'held', freshHeld - heldLeft) end
if sequences then
  if sequences.fifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'fifo', sequences.fifoUsed) end
  if sequences.lifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'lifo', sequences.lifoUsed) end
end

local nextWakeUs, nextDelayedMs, stale, more = 0, 0, 0, 0
if delivered < wanted then
  -- Some asked in vain: say when to look again.
  local first = rcall('ZRANGE', input.wakeupsKey, 0, 0, 'WITHSCORES')
  nextWakeUs = tonumber(first[2]) or 0
  if nextWakeUs > now then nextWakeUs = roomWakeAtUs(first[1], nextWakeUs) end
  if comingBackUs > 0 and (nextWakeUs == 0 or comingBackUs < nextWakeUs) then nextWakeUs = comingBackUs end
  if not isPausedOrMaxed and rateLimitMs == 0 and (budget <= 0 or freshBudget <= 0) and (jobHeadOf() ~= nil or #classHead > 0 or fresh ~= nil
      or (not deferred and classSpec ~= nil and rcall('LLEN', input.waitKey) + rcall('ZCARD', input.prioritizedKey) > 0)) then
    nextWakeUs, more = now, 1
  end
  nextDelayedMs = math.floor(getNextDelayedTimestamp(input.delayedKey) or 0)
  stale = rcall('SCARD', input.staleKey)
end
local unclassified = 0
if not isPausedOrMaxed and (classSpec == nil or deferred) then unclassified = rcall('LLEN', input.waitKey) + rcall('ZCARD', input.prioritizedKey) end
reply[1], reply[2], reply[3], reply[4], reply[5] = now, nextWakeUs, nextDelayedMs, unclassified, stale
reply[6], reply[7], reply[8], reply[9], reply[10] = dropped, gen, more, delivered, rateLimitMs
