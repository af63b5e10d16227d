--[[
  Takes jobs that producers added (wait, then prioritized, head first) for classification: each moves
  into the intake set with a lease, and its fields come back so that the worker can work out the buckets
  it draws from. A lease that expires (its worker died) puts the job back at the front of wait (bullmq 5:
  of the paused list while the queue is paused).

  Input:
    KEYS[1] wait   KEYS[2] prioritized   KEYS[3] intake (ZSET id -> lease expiry ms)   KEYS[4] meta
    KEYS[5] marker
    ARGV[1] bullmq key prefix of the queue   ARGV[2] most jobs to take   ARGV[3] lease (ms)
    (test builds read one more trailing ARGV, a clock offset in ms)
    bullmq 5 only: the paused list, composed from ARGV[1] as bullmq composes job keys (bullmqLine/queueLists)

  Output:
    { nowUs, n, then per job: id, name, data, opts, priority, stored attributes (or false) }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "bullmq/includes/isQueuePaused"
--- @include "bullmqLine/queueLists"

local waitKey, prioritizedKey, intakeKey, metaKey, markerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local jobPrefix, most, leaseMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = nowUs()
local nowMs = math.floor(now / 1000)

local expired = rcall('ZRANGEBYSCORE', intakeKey, '-inf', nowMs, 'LIMIT', 0, most)
-- Back where bullmq keeps waiting jobs (bullmq 5: the paused list while the queue is paused).
local backKey = #expired > 0 and waitingListOf(metaKey, waitKey, jobPrefix)
for _, jobId in ipairs(expired) do
  rcall('ZREM', intakeKey, jobId)
  rcall('RPUSH', backKey, jobId)
end
if #expired > 0 then rcall('ZADD', markerKey, 0, '0') end

local reply = { now, 0 }
if isQueuePaused(metaKey) then return reply end
-- Head first: the right end of wait, then the lowest priority scores.
local ids = rcall('RPOP', waitKey, most) or {}
if #ids < most then
  local popped = rcall('ZPOPMIN', prioritizedKey, most - #ids)
  for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
end
local taken = #ids
if taken > 0 then
  local leases = {}
  for i, jobId in ipairs(ids) do
    leases[2 * i - 1] = nowMs + leaseMs
    leases[2 * i] = jobId
  end
  rcall('ZADD', intakeKey, unpack(leases))
  for _, jobId in ipairs(ids) do
    local fields = rcall('HMGET', jobPrefix .. jobId, 'name', 'data', 'opts', 'priority', 'tha')
    reply[#reply + 1] = jobId
    for i = 1, 5 do reply[#reply + 1] = fields[i] end
  end
end
reply[2] = taken
return reply
