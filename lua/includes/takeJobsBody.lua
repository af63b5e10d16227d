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
  takeJobs below is the call's order of work: the slots (includes/slotTokens), the room source's start,
  bullmq's delayed jobs and limiter, the wake of due buckets (includes/wakeDueBuckets); then the main loop,
  which takes jobs in queue order from the held jobs of classes with room (includes/readyJobs), the heads of
  woken classes and fresh jobs from wait (includes/freshJobs), and delivers or files each
  (includes/placeJobs); then the reply. The parts are passed the call's input and the run's state (run)
  rather than share main-chunk locals: Lua allows a chunk 200 locals, and these scripts include bullmq's Lua.
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
--- @include "freshJobs"

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

  -- The lowest order among classes of due buckets this call does not wake: nothing ordered after it goes now.
  local dueBound = wakeDueBuckets(input, now)

  local stateFields = rcall('HMGET', input.stateKey, 'gen', 'lua', 'mw', 'fair', 'fv', 'fifo')
  deadlines.read(stateFields[3])
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
    -- The fresh job at hand (false: none), whether fresh intake ended, and whether it ended on a job the
    -- worker's classifier must see; how many more fresh jobs this call may hold (includes/freshJobs).
    fresh = false, freshEnded = classSpec == nil, deferred = false, freshBudget = freshJobs.BUDGET,
    -- Sequence numbers handed out (freshJobs.order); when a fresh job's room on its way is awaited till
    -- (freshJobs.roomIsComing); whether the queue has put-back jobs (putBack.any; nil: not read yet).
    sequences = false, comingBackUs = 0, putBackExists = nil,
    -- dueBound (nil: none), and whether the call stopped at it (the reply then asks for another at once).
    dueBound = dueBound, stoppedAtBound = false,
    -- The queue's fair shares (includes/fairness), false without a fairness key.
    fair = fairness.start(stateFields[4], classSpec, stateFields[5], stateFields[6]),
  }

  placeJobs.readAnyWaiting(input, run)

  -- Held jobs past their deadline go first, each to a slot, for the worker to fail (includes/deadlines). Every one
  -- is taken while slots are left, and the loop below runs only then: it never meets a job past its deadline.
  if not isPausedOrMaxed then placeJobs.expireDue(input, run, wanted, concurrency) end

  local classHead = rcall('ZRANGE', input.readyClassesKey, 0, 0, 'WITHSCORES')
  while not isPausedOrMaxed and run.rateLimitMs == 0 and run.delivered < wanted and budget > 0 do
    if concurrency and rcall('LLEN', input.activeKey) >= concurrency then break end
    local entry, order = readyJobs.head(input, run)
    local classOrder = #classHead > 0 and tonumber(classHead[2]) or nil
    -- Taken straight into active only when nothing can hold it back: a bound may (it is then left in wait).
    local job = freshJobs.head(input, run, entry == nil and classOrder == nil and dueBound == nil)
    local fromFresh = job ~= nil
    if fromFresh and (entry ~= nil or classOrder ~= nil) then
      local first = freshJobs.order(input, run, job)
      fromFresh = (entry == nil or first < order) and (classOrder == nil or first < classOrder)
    end
    local fromJobs = not fromFresh and entry ~= nil and (classOrder == nil or order < classOrder)
    if dueBound then
      local nextOrder = classOrder
      if fromFresh then nextOrder = freshJobs.order(input, run, job) elseif fromJobs then nextOrder = order end
      if nextOrder ~= nil and nextOrder > dueBound then
        run.stoppedAtBound = true
        break
      end
    end
    if fromFresh and freshJobs.roomIsComing(input, run, job) then
      run.fresh, run.freshEnded = false, true
    elseif fromFresh then
      freshJobs.place(input, run, freshJobs.take(input, run))
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
          placeJobs.deliver(input, run, jobId, bucketsOrFull, true, false, order)
        end
      end
    else
      if #classHead == 0 then break end
      local member, order = classHead[1], tonumber(classHead[2])
      local classKey = classJobsKey(input.queueBase, member)
      -- Waiting (a newer job of the class, ahead of its head, found no room after the head was read): not ready.
      local fits, bucketsOrFull, fullAtUs = 'waiting', nil, nil
      if not run.waitingOn[member] then fits, bucketsOrFull, fullAtUs = placeJobs.checkClass(run, member) end
      if fits == 'waiting' then
        -- Out of ready-classes (placeJobs.wait took it out already, unless an older build left it in both).
        rcall('ZREM', input.readyClassesKey, member)
      elseif fits == 'stale' then
        rcall('ZREM', input.readyClassesKey, member)
        rcall('SADD', input.staleKey, member)
        budget = budget - 1
      elseif fits == nil then
        placeJobs.wait(input, run, member, order, bucketsOrFull, fullAtUs, false)
        budget = budget - 1
      else
        local popped = rcall('ZPOPMIN', classKey)
        if #popped > 0 then
          local went = placeJobs.deliver(input, run, popped[1], bucketsOrFull, true, false, tonumber(popped[2]))
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

  -- Jobs this call's estimates gave a deadline of now fail at once, where a slot is left.
  if not isPausedOrMaxed and run.delivered < wanted then placeJobs.expireDue(input, run, wanted, concurrency) end
  fairness.save(input, run.fair)
  readyJobs.removeTaken(input, run)
  saveRoom()
  if run.freshHeld ~= run.heldLeft then rcall('HINCRBY', input.stateKey, 'held', run.freshHeld - run.heldLeft) end
  freshJobs.saveSequences(input, run)

  local nextWakeUs, nextDelayedMs, stale, more = 0, 0, 0, 0
  if run.delivered < wanted then
    -- Some asked in vain: say when to look again.
    local first = rcall('ZRANGE', input.wakeupsKey, 0, 0, 'WITHSCORES')
    nextWakeUs = tonumber(first[2]) or 0
    if nextWakeUs > now then nextWakeUs = roomWakeAtUs(first[1], nextWakeUs) end
    local comingBackUs = run.comingBackUs
    if comingBackUs > 0 and (nextWakeUs == 0 or comingBackUs < nextWakeUs) then nextWakeUs = comingBackUs end
    -- A held job's deadline: the worker comes back to fail it then.
    local deadlineMs = not isPausedOrMaxed and deadlines.earliestMs(input.queueBase)
    if deadlineMs and deadlineMs * 1000 > now and (nextWakeUs == 0 or deadlineMs * 1000 < nextWakeUs) then nextWakeUs = deadlineMs * 1000 end
    if run.stoppedAtBound then nextWakeUs, more = now, 1 end
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
