--[[
  Places classified jobs: each leaves the intake set and is held, ordered by priority, then first in
  first out (lifo jobs first), with its attributes stored with it so that they are never computed again.
  A job whose class (the set of buckets it draws from) waits on a full bucket joins the class's own list;
  any other joins the queue-ordered ready-jobs set.

  Input:
    KEYS[1] intake   KEYS[2] state   KEYS[3] ready-jobs   KEYS[4] classes   KEYS[5] marker
    KEYS[6] class-state   KEYS[7] put-back (SET, see lua/markPutBack-2.lua)
    ARGV[1] bullmq key prefix of the queue   ARGV[2] queue base of our keys   ARGV[3] config generation
    ARGV[4] n, then per job: id, class, priority, lifo (1/0), attributes JSON ('' to leave as stored), its fairness
            group ('' when the queue has no fairness key) and that group's declared weight (includes/fairness)

  Output:
    { placed } or { -1 } when the queue's config generation is no longer ARGV[3] (nothing is placed; the
    jobs stay in intake until the caller classifies them again under the new config).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/schedulerKeys"
--- @include "includes/throttleStatsNotes"
--- @include "includes/jobOrder"
--- @include "includes/fairness"
--- @include "includes/intArg"

local intakeKey, stateKey, readyJobsKey, classesKey, markerKey, classStateKey, putBackKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local jobPrefix, queueBase, gen = ARGV[1], ARGV[2], ARGV[3]
if (rcall('HGET', stateKey, 'gen') or '') ~= gen then return { -1 } end

local count = tonumber(ARGV[4])
local ids = {}
local STRIDE = 7
for i = 1, count do ids[i] = ARGV[5 + STRIDE * (i - 1)] end
if count == 0 then return { 0 } end
local leased = rcall('ZMSCORE', intakeKey, unpack(ids))

-- Jobs their worker put back (lua/lateStartPutBack-n.lua) go first among their priority, as lifo jobs do.
local putBack = {}
if rcall('EXISTS', putBackKey) == 1 then
  for i = 1, count do
    if leased[i] and rcall('SREM', putBackKey, ids[i]) == 1 then putBack[i] = true end
  end
end

-- Sequence numbers for the batch, allocated at once (includes/jobOrder).
local fifoCount, lifoCount = 0, 0
for i = 1, count do
  if ARGV[5 + STRIDE * (i - 1) + 3] == '1' or putBack[i] then lifoCount = lifoCount + 1 else fifoCount = fifoCount + 1 end
end
local fifoNext = fifoCount > 0 and rcall('HINCRBY', stateKey, 'fifo', fifoCount) - fifoCount or 0
local lifoNext = lifoCount > 0 and rcall('HINCRBY', stateKey, 'lifo', lifoCount) - lifoCount or 0

local placedIds, gone, ready, filed, waitingOn = {}, {}, {}, {}, {}
local nowMs = math.floor(nowUs() / 1000)
-- Fair shares: a job's place is its group's turn (includes/fairness), when the worker names its group.
local fair = false
for i = 1, count do
  if ARGV[5 + STRIDE * (i - 1) + 5] ~= '' then
    local stored = rcall('HMGET', stateKey, 'fv', 'fifo')
    fair = fairness.start('1', nil, stored[1], stored[2])
    break
  end
end
local input = { queueBase = queueBase, stateKey = stateKey, jobPrefix = jobPrefix }
for i = 1, count do
  local at = 5 + STRIDE * (i - 1)
  local jobId, member, priority, lifo, attributes = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
  local group, weight = ARGV[at + 5], tonumber(ARGV[at + 6])
  -- A job removed since intake is let go here when its hash is gone; one removed later is dropped by
  -- the delivery script when it comes up (see forgetRemovedJobs).
  local keep = leased[i] and (attributes == '' or rcall('EXISTS', jobPrefix .. jobId) == 1)
  if leased[i] and not keep then gone[#gone + 1] = jobId end
  if keep then
    if attributes ~= '' then rcall('HSET', jobPrefix .. jobId, 'tha', attributes) end
    local order
    if lifo == '1' or putBack[i] then
      lifoNext = lifoNext + 1
      order = jobOrder(priority, true, lifoNext)
    elseif fair and group ~= '' then
      fair.spec.w[group] = weight
      local _, buckets = parseClass(member)
      order = jobOrder(priority, false, fairness.tag(input, fair, group, fairness.costOf(buckets), jobId))
    else
      fifoNext = fifoNext + 1
      order = jobOrder(priority, false, fifoNext)
    end
    local bucketId = waitingOn[member]
    if bucketId == nil then bucketId = rcall('HGET', classStateKey, member) or false; waitingOn[member] = bucketId end
    if bucketId then
      rcall('ZADD', classJobsKey(queueBase, member), intArg(order), jobId)
      rcall('ZADD', waitersKey(queueBase, bucketId), 'XX', 'LT', intArg(order), member)
      local bucket = parseBucketId(bucketId)
      statsNotes.waiting(queueBase, bucket, 1)
      statsNotes.started(queueBase, bucket, member, jobId, nowMs)
      rcall('HINCRBY', stateKey, 'blocked', 1)
      filed[member] = true
    else
      ready[#ready + 1] = intArg(order)
      ready[#ready + 1] = member .. '#' .. jobId
    end
    placedIds[#placedIds + 1] = jobId
  end
end
if #gone > 0 then rcall('ZREM', intakeKey, unpack(gone)) end
if #placedIds == 0 then return { 0 } end
rcall('ZREM', intakeKey, unpack(placedIds))
fairness.save(input, fair)
rcall('HINCRBY', stateKey, 'held', #placedIds)
if #ready > 0 then rcall('ZADD', readyJobsKey, unpack(ready)) end
for member in pairs(filed) do rcall('SADD', classesKey, member) end
rcall('ZADD', markerKey, 0, '0')
return { #placedIds }
