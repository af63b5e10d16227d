--[[
  The body of the delivery scripts (takeNextJobs, takeLeasedJobs): what the header of takeNextJobs-19.lua
  describes, with the room of each bucket asked of a room source the including script chose first:
    includes/exactRoom    the buckets' window counters, counted in this script (exact delivery)
    includes/leasedRoom   tokens leased from the throttle namespace's grantor, spent here (leased delivery)
  A room source defines initRoom(ctx), roomSource(bucket) (nil: its throttle's limits are not known, the
  class waits a second, includes/placeJobs' checkBuckets), roomLeft(source), roomReturnsAtUs(source, cost) (0: room now for cost tokens, 1 when nil), spendRoom(source,
  fresh, jobId, cost), noteBlocked(member,
  order, bucket, atUs), freshJobTaken(jobId) (a job from wait, before its buckets are looked at), roomWakeAtUs(bucketId,
  atUs) (when a caller told to wait for the bucket's room at atUs should look again) and saveRoom(); and comingRoom: nil, or { soon(source, cost) (no room for cost, but tokens already
  asked for are due within moments: fresh jobs wait in bullmq's lists rather than be filed), lackedAlone(source)
  (a fresh job lacked room in this bucket only), askedSoon(member) (the waiting class's tokens are in
  the next lease round), lookAgain(source) (a due bucket with no room wakes its waiters all the same: the
  room the grantor named has come, and comes only once they are asked for) }.
  Needs, defined by the including script: rcall; includes nowUs, intArg, schedulerKeys,
  throttleStatsNotes, jobOrder, classifyInLua, bullmqLine/queueLists and bullmq's getNextDelayedTimestamp,
  promoteDelayedJobs, getRateLimitTTL and prepareJobForProcessing (includes/takeJobsInput includes them all).
  Defines takeJobs(input), input the table of KEYS and ARGV that includes/takeJobsInput builds: it returns
  the run's state, run, whose reply (run.reply) the including script returns, after adding its own parts
  (its jobs end at run.REPLY_HEAD + 2 * run.delivered; run.gen: the queue's config generation).
]]
--- @include "slotTokens"
--- @include "wakeDueBuckets"
--- @include "placeJobs"
--- @include "readyJobs"

-- Most jobs straight from wait one call may hold (their buckets full) before handing over to the next.
local FRESH_BUDGET = 256

-- Takes the call's jobs (input: includes/takeJobsInput's table); returns the run's state, the reply in run.reply.
local function takeJobs(input)
  local tokens, refused = slotTokens(input)
  local wanted = #tokens
  -- Refusals and moves still to spend (the main loop's).
  local budget = input.budget

  local now = nowUs()
  local nowMs = math.floor(now / 1000)
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
  local reply = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, #refused }
  for i = 1, #refused do reply[11 + i] = refused[i] end
  -- The run's state: what the parts of the body share, passed to each (one table, built once a call).
  local run = {
    now = now, nowMs = nowMs, nowMsArg = intArg(nowMs), gen = gen, classSpec = classSpec, tokens = tokens,
    limiterMax = limiterMax, limiterMs = limiterMs, rateLimitMs = rateLimitMs,
    REPLY_HEAD = 11 + #refused, reply = reply,
    -- delivered: jobs this call delivered; heldLeft: jobs counted as held that stopped being held in this call
    -- (delivered, or removed and dropped); freshHeld: jobs straight from wait this call held.
    delivered = 0, dropped = 0, heldLeft = 0, freshHeld = 0,
    -- Class -> the bucket id it waits on (false: none), as found in this run; someWaiting, anyWaiting: see
    -- includes/placeJobs' readAnyWaiting.
    waitingOn = {}, someWaiting = false, anyWaiting = false,
    lockOpts = { lockDuration = input.lockDuration, name = input.workerName },
    -- The ready-jobs reader's chunk, its next entry, the entries taken, and whether the chunk is the last
    -- (includes/readyJobs).
    readyChunk = {}, readyAt = 1, readyTaken = 0, readyEnded = false,
    -- The fresh job at hand (freshHead), whether fresh intake ended, and whether it ended on a job the
    -- worker's classifier must see; how many more fresh jobs this call may hold.
    fresh = false, freshEnded = classSpec == nil, deferred = false, freshBudget = FRESH_BUDGET,
    -- Sequence numbers handed out (freshOrder); when a fresh job's room on its way is awaited till
    -- (roomIsComing); whether the queue has put-back jobs (putBack.any; nil: not read yet).
    sequences = false, comingBackUs = 0, putBackExists = nil,
  }

  placeJobs.readAnyWaiting(input, run)

  -- The first job of wait (then prioritized) that no worker has classified, classified here; nil when
  -- there is none, or it needs the worker's classifier (deferred), or this queue's throttles do.
  -- comesFirst: nothing held is ahead of it, so it is taken straight into active (one command, as bullmq's
  -- moveToActive does) and put back should it not go.
  local function freshHead(comesFirst)
    if run.fresh or run.freshEnded then return run.fresh or nil end
    if run.freshBudget <= 0 then
      run.freshEnded = true
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
      run.freshEnded = true
      return nil
    end
    -- A job without a hash (removed) is the worker's classifier's to let go. (Every job hash has data.)
    local classSpec = run.classSpec
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
      run.freshEnded, run.deferred = true, true
      return nil
    end
    -- A job in wait is no longer in flight: an earlier delivery of it that ended unreleased stops counting now.
    freshJobTaken(jobId)
    local fresh = { id = jobId, buckets = buckets, from = from, member = false, putBack = false }
    run.fresh = fresh
    return fresh
  end

  local function memberOf(job)
    if not job.member then job.member = classMember(run.gen, job.buckets) end
    return job.member
  end

  -- Jobs their worker put back (lua/markPutBack-2.lua) go first among their priority, as lifo jobs do. Whether
  -- the queue has any is read once a run, when a fresh job first needs it (run.putBackExists).
  local putBack = {}
  function putBack.any()
    if run.putBackExists == nil then run.putBackExists = rcall('EXISTS', input.putBackKey) == 1 end
    return run.putBackExists
  end
  function putBack.has(jobId)
    return putBack.any() and rcall('SISMEMBER', input.putBackKey, jobId) == 1
  end
  -- Takes the job's mark: whether it had one.
  function putBack.take(jobId)
    return putBack.any() and rcall('SREM', input.putBackKey, jobId) == 1
  end

  -- Sequence numbers handed out this run (see includes/jobOrder), stored once at the end.
  local function freshOrder(job)
    if job.order then return job.order end
    local sequences = run.sequences
    if not sequences then
      local stored = rcall('HMGET', input.stateKey, 'fifo', 'lifo')
      sequences = { fifo = tonumber(stored[1]) or 0, lifo = tonumber(stored[2]) or 0, fifoUsed = 0, lifoUsed = 0 }
      run.sequences = sequences
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
    local job = run.fresh
    run.fresh = false
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
  local function roomIsComing(job)
    if not comingRoom then return false end
    if run.someWaiting and placeJobs.waitingOnOf(input, run, memberOf(job)) and not comingRoom.askedSoon(memberOf(job)) then return false end
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
    run.comingBackUs = run.now + 20000
    return true
  end

  -- A job straight from wait: delivered when its buckets have room, else held in its class.
  local function placeFresh(job)
    local blockedOn = run.someWaiting and placeJobs.waitingOnOf(input, run, memberOf(job))
    local fits, bucketsOrFull, fullAtUs
    if not blockedOn then
      fits, bucketsOrFull, fullAtUs = placeJobs.checkBuckets(run, job.buckets)
      if fits == true then
        placeJobs.deliver(input, run, job.id, bucketsOrFull, false, job.from == 'active')
        return
      end
    end
    local member = memberOf(job)
    if job.from == 'active' then rcall('LREM', input.activeKey, 1, job.id) end
    run.freshHeld = run.freshHeld + 1
    run.freshBudget = run.freshBudget - 1
    placeJobs.file(input, run, member, job.id, freshOrder(job))
    if fits == 'stale' then
      rcall('SADD', input.staleKey, member)
    elseif not blockedOn then
      placeJobs.wait(input, run, member, freshOrder(job), bucketsOrFull, fullAtUs, job.id)
    end
  end

  local classHead = rcall('ZRANGE', input.readyClassesKey, 0, 0, 'WITHSCORES')
  while not isPausedOrMaxed and run.rateLimitMs == 0 and run.delivered < wanted and budget > 0 do
    if concurrency and rcall('LLEN', input.activeKey) >= concurrency then break end
    local entry, order = readyJobs.head(input, run)
    local classOrder = #classHead > 0 and tonumber(classHead[2]) or nil
    local job = freshHead(entry == nil and classOrder == nil)
    local fromFresh = job ~= nil
    if fromFresh and (entry ~= nil or classOrder ~= nil) then
      local first = freshOrder(job)
      fromFresh = (entry == nil or first < order) and (classOrder == nil or first < classOrder)
    end
    local fromJobs = not fromFresh and entry ~= nil and (classOrder == nil or order < classOrder)
    if fromFresh and roomIsComing(job) then
      run.fresh, run.freshEnded = false, true
    elseif fromFresh then
      placeFresh(takeFresh())
    elseif fromJobs then
      -- Takes the head from ready-jobs (includes/readyJobs: removed at the end).
      run.readyAt = run.readyAt + 2
      run.readyTaken = run.readyTaken + 1
      local hash = string.find(entry, '#', 1, true)
      local member, jobId = string.sub(entry, 1, hash - 1), string.sub(entry, hash + 1)
      local blockedOn = placeJobs.waitingOnOf(input, run, member)
      if blockedOn then
        placeJobs.file(input, run, member, jobId, order)
        budget = budget - 1
      else
        local fits, bucketsOrFull, fullAtUs = placeJobs.checkClass(run, member)
        if fits == 'stale' then
          placeJobs.file(input, run, member, jobId, order)
          rcall('SADD', input.staleKey, member)
          budget = budget - 1
        elseif fits == nil then
          placeJobs.file(input, run, member, jobId, order)
          placeJobs.wait(input, run, member, order, bucketsOrFull, fullAtUs, jobId)
          budget = budget - 1
        else
          placeJobs.deliver(input, run, jobId, bucketsOrFull, true)
        end
      end
    else
      if #classHead == 0 then break end
      local member, order = classHead[1], tonumber(classHead[2])
      local classKey = classJobsKey(input.queueBase, member)
      local fits, bucketsOrFull, fullAtUs = placeJobs.checkClass(run, member)
      if fits == 'stale' then
        rcall('ZREM', input.readyClassesKey, member)
        rcall('SADD', input.staleKey, member)
        budget = budget - 1
      elseif fits == nil then
        rcall('ZREM', input.readyClassesKey, member)
        placeJobs.wait(input, run, member, order, bucketsOrFull, fullAtUs, false)
        budget = budget - 1
      else
        local popped = rcall('ZPOPMIN', classKey)
        if #popped > 0 then
          local went = placeJobs.deliver(input, run, popped[1], bucketsOrFull, true)
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

  readyJobs.removeTaken(input, run)
  saveRoom()
  if run.freshHeld ~= run.heldLeft then rcall('HINCRBY', input.stateKey, 'held', run.freshHeld - run.heldLeft) end
  local sequences = run.sequences
  if sequences then
    if sequences.fifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'fifo', sequences.fifoUsed) end
    if sequences.lifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'lifo', sequences.lifoUsed) end
  end

  local nextWakeUs, nextDelayedMs, stale, more = 0, 0, 0, 0
  if run.delivered < wanted then
    -- Some asked in vain: say when to look again.
    local first = rcall('ZRANGE', input.wakeupsKey, 0, 0, 'WITHSCORES')
    nextWakeUs = tonumber(first[2]) or 0
    if nextWakeUs > now then nextWakeUs = roomWakeAtUs(first[1], nextWakeUs) end
    local comingBackUs = run.comingBackUs
    if comingBackUs > 0 and (nextWakeUs == 0 or comingBackUs < nextWakeUs) then nextWakeUs = comingBackUs end
    if not isPausedOrMaxed and run.rateLimitMs == 0 and (budget <= 0 or run.freshBudget <= 0) and (readyJobs.head(input, run) ~= nil or #classHead > 0 or run.fresh
        or (not run.deferred and classSpec ~= nil and rcall('LLEN', input.waitKey) + rcall('ZCARD', input.prioritizedKey) > 0)) then
      nextWakeUs, more = now, 1
    end
    nextDelayedMs = math.floor(getNextDelayedTimestamp(input.delayedKey) or 0)
    stale = rcall('SCARD', input.staleKey)
  end
  local unclassified = 0
  if not isPausedOrMaxed and (classSpec == nil or run.deferred) then unclassified = rcall('LLEN', input.waitKey) + rcall('ZCARD', input.prioritizedKey) end
  reply[1], reply[2], reply[3], reply[4], reply[5] = now, nextWakeUs, nextDelayedMs, unclassified, stale
  reply[6], reply[7], reply[8], reply[9], reply[10] = run.dropped, gen, more, run.delivered, run.rateLimitMs
  return run
end
