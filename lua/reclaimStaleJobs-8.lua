--[[
  Takes held jobs of classes from an older config generation (a throttle was added or removed, or a key
  or missing-key policy changed) back for classification: they move into the intake set with a lease,
  exactly as new jobs do, and come back with their stored data and attributes.

  Input:
    KEYS[1] stale   KEYS[2] classes   KEYS[3] intake   KEYS[4] state   KEYS[5] ready-classes
    KEYS[6] class-state   KEYS[7] blocked-since   KEYS[8] removed-held
    ARGV[1] bullmq key prefix of the queue   ARGV[2] queue base of our keys   ARGV[3] current generation
    ARGV[4] most jobs to take   ARGV[5] lease (ms)   ARGV[6..] candidate classes
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, n, then per job: id, name, data, opts, priority, stored attributes (or false) }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/schedulerKeys"
--- @include "includes/throttleStatsNotes"

local staleKey, classesKey, intakeKey, stateKey, readyKey, classStateKey, blockedSinceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local jobPrefix, queueBase, gen, most, leaseMs = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local removedHeldKey = KEYS[8]
local now = nowUs()
local nowMs = math.floor(now / 1000)
local reply = { now, 0 }
local taken = 0

for i = 6, #ARGV do
  if taken >= most then break end
  local member = ARGV[i]
  local memberGen, buckets = parseClass(member)
  if memberGen ~= gen and rcall('SISMEMBER', classesKey, member) == 1 then
    rcall('ZREM', readyKey, member)
    local waitedOn = rcall('HGET', classStateKey, member)
    if waitedOn then
      -- No longer held by that full bucket: all its jobs come back for classification.
      local held = rcall('ZCARD', classJobsKey(queueBase, member))
      statsNotes.waiting(queueBase, parseBucketId(waitedOn), -held)
      rcall('HINCRBY', stateKey, 'blocked', -held)
      rcall('HDEL', classStateKey, member)
      rcall('ZREM', blockedSinceKey, member)
    end
    for _, bucket in ipairs(buckets) do rcall('ZREM', waitersKey(queueBase, bucket.id), member) end
    local classKey = classJobsKey(queueBase, member)
    local popped = rcall('ZPOPMIN', classKey, most - taken)
    local stillHeld = 0
    for j = 1, #popped, 2 do
      local jobId = popped[j]
      -- A job removed from outside and already uncounted (forgetRemovedJobs) is simply let go.
      statsNotes.ended(queueBase, member, jobId, buckets, nil)
      if rcall('SREM', removedHeldKey, jobId) == 0 then
        stillHeld = stillHeld + 1
        rcall('ZADD', intakeKey, nowMs + leaseMs, jobId)
        local fields = rcall('HMGET', jobPrefix .. jobId, 'name', 'data', 'opts', 'priority', 'tha')
        reply[#reply + 1] = jobId
        for f = 1, 5 do reply[#reply + 1] = fields[f] end
        taken = taken + 1
      end
    end
    if stillHeld > 0 then rcall('HINCRBY', stateKey, 'held', -stillHeld) end
    if rcall('EXISTS', classKey) == 0 then
      rcall('SREM', classesKey, member)
      rcall('SREM', staleKey, member)
    else
      rcall('SADD', staleKey, member)
    end
  elseif memberGen == gen or rcall('SISMEMBER', classesKey, member) == 0 then
    rcall('SREM', staleKey, member)
  end
end
reply[2] = taken
return reply
