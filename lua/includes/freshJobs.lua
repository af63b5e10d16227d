--[[
  Fresh jobs: jobs producers added to wait (then prioritized) that no worker has classified, classified by the
  delivery call itself (includes/takeJobsBody) when the queue's throttles key only on job.data and the job
  name (run.classSpec, includes/classifyInLua). A fresh job that comes first in queue order and whose buckets
  have room goes straight from wait to active, with no intake by a worker first; one that cannot go is held
  in its class as a classified job would be. A call
  holds at most BUDGET of them, so that a burst of jobs into full buckets does not make one call long: the
  reply asks for another. A job only the worker's classifier can classify (deferred) ends fresh intake: the
  reply counts what is left for the worker.
  Needs rcall, includes/classifyInLua, includes/jobOrder, includes/fairness (run.fair: a job's order is its group's
  turn when the queue has a fairness key), and the room source (roomSource, roomReturnsAtUs,
  freshJobTaken, comingRoom: see includes/takeJobsBody). Each function is passed the call's input
  (includes/takeJobsInput) and the run's state (run, includes/takeJobsBody's takeJobs). Defines freshJobs:
  head, memberOf, order, take, roomIsComing, place and saveSequences, and putBack (any, has, take).
]]
--- @include "classifyInLua"
--- @include "jobOrder"
--- @include "fairness"
--- @include "placeJobs"

local freshJobs = {
  -- Most jobs straight from wait one call may hold (their buckets full) before handing over to the next.
  BUDGET = 256,
}

-- The first job of wait (then prioritized) that no worker has classified, classified here; nil when
-- there is none, or it needs the worker's classifier (deferred), or this queue's throttles do.
-- comesFirst: nothing held is ahead of it, so it is taken straight into active (one command, as bullmq's
-- moveToActive does) and put back should it not go.
function freshJobs.head(input, run, comesFirst)
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
  local buckets, group
  if found then buckets, group = classifyInLua(classSpec, name, dataText) end
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
  local fresh = { id = jobId, buckets = buckets, from = from, member = false, putBack = false, group = group }
  run.fresh = fresh
  return fresh
end

function freshJobs.memberOf(run, job)
  if not job.member then job.member = classMember(run.gen, job.buckets) end
  return job.member
end

-- Jobs their worker put back (lua/markPutBack-2.lua) go first among their priority, as lifo jobs do. Whether
-- the queue has any is read once a run, when a fresh job first needs it (run.putBackExists).
local putBack = {}
function putBack.any(input, run)
  if run.putBackExists == nil then run.putBackExists = rcall('EXISTS', input.putBackKey) == 1 end
  return run.putBackExists
end
function putBack.has(input, run, jobId)
  return putBack.any(input, run) and rcall('SISMEMBER', input.putBackKey, jobId) == 1
end
-- Takes the job's mark: whether it had one.
function putBack.take(input, run, jobId)
  return putBack.any(input, run) and rcall('SREM', input.putBackKey, jobId) == 1
end

-- Sequence numbers handed out this run (see includes/jobOrder), stored once at the end (saveSequences).
function freshJobs.order(input, run, job)
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
  if lifo or job.putBack or putBack.has(input, run, job.id) then
    sequences.lifoUsed = sequences.lifoUsed + 1
    job.order = jobOrder(priority, true, sequences.lifo + sequences.lifoUsed)
  elseif run.fair and job.group then
    -- Its group's turn (includes/fairness), in its dearest bucket's cost.
    job.order = jobOrder(priority, false, fairness.tag(input, run.fair, job.group, fairness.costOf(job.buckets), job.id))
  else
    sequences.fifoUsed = sequences.fifoUsed + 1
    job.order = jobOrder(priority, false, sequences.fifo + sequences.fifoUsed)
  end
  return job.order
end

function freshJobs.saveSequences(input, run)
  local sequences = run.sequences
  if sequences then
    if sequences.fifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'fifo', sequences.fifoUsed) end
    if sequences.lifoUsed > 0 then rcall('HINCRBY', input.stateKey, 'lifo', sequences.lifoUsed) end
  end
end

function freshJobs.take(input, run)
  local job = run.fresh
  run.fresh = false
  -- Its mark goes as it is taken; its order may be worked out after (when it is held).
  if putBack.take(input, run, job.id) then job.putBack = true end
  if job.from == 'prioritized' then
    rcall('ZREM', input.prioritizedKey, job.id)
  elseif job.from == 'wait' then
    rcall('RPOP', input.waitKey)
  end
  return job
end

-- A fresh job that lacks room only in buckets whose room is on its way (includes/leasedRoom: a flowing
-- pool that ran dry, its refill asked for) stays first in bullmq's list, and fresh intake ends.
function freshJobs.roomIsComing(input, run, job)
  if not comingRoom then return false end
  if run.someWaiting and placeJobs.waitingOnOf(input, run, freshJobs.memberOf(run, job)) and not comingRoom.askedSoon(freshJobs.memberOf(run, job)) then return false end
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
function freshJobs.place(input, run, job)
  local blockedOn = run.someWaiting and placeJobs.waitingOnOf(input, run, freshJobs.memberOf(run, job))
  local fits, bucketsOrFull, fullAtUs
  if not blockedOn then
    fits, bucketsOrFull, fullAtUs = placeJobs.checkBuckets(run, job.buckets)
    if fits == true then
      placeJobs.deliver(input, run, job.id, bucketsOrFull, false, job.from == 'active', job.order, job.group)
      return
    end
  end
  local member = freshJobs.memberOf(run, job)
  if job.from == 'active' then rcall('LREM', input.activeKey, 1, job.id) end
  run.freshHeld = run.freshHeld + 1
  run.freshBudget = run.freshBudget - 1
  placeJobs.file(input, run, member, job.id, freshJobs.order(input, run, job))
  if fits == 'stale' then
    rcall('SADD', input.staleKey, member)
  elseif not blockedOn then
    placeJobs.wait(input, run, member, freshJobs.order(input, run, job), bucketsOrFull, fullAtUs, job.id)
  end
end
