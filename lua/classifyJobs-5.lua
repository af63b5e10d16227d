--[[
  Places classified jobs: each leaves the intake set and is held in its class (the set of buckets it
  draws from), ordered by priority, then first in first out (lifo jobs first), and its attributes are
  stored with it so that they are never computed again.

  Input:
    KEYS[1] intake   KEYS[2] state   KEYS[3] ready   KEYS[4] classes   KEYS[5] marker
    ARGV[1] bullmq key prefix of the queue   ARGV[2] queue base of our keys   ARGV[3] config generation
    ARGV[4] n, then per job: id, class, priority, lifo (1/0), attributes JSON ('' to leave as stored)

  Output:
    { placed } or { -1 } when the queue's config generation is no longer ARGV[3] (nothing is placed; the
    jobs stay in intake until the caller classifies them again under the new config).
]]
local rcall = redis.call

--- @include "includes/schedulerKeys"

local intakeKey, stateKey, readyKey, classesKey, markerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local jobPrefix, queueBase, gen = ARGV[1], ARGV[2], ARGV[3]
if (rcall('HGET', stateKey, 'gen') or '') ~= gen then return { -1 } end

local ORDER_SPAN = 0x80000000
local placed = 0
local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local jobId, member, priority, lifo, attributes = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
  at = at + 5
  if rcall('ZREM', intakeKey, jobId) == 1 and rcall('EXISTS', jobPrefix .. jobId) == 1 then
    if attributes ~= '' then rcall('HSET', jobPrefix .. jobId, 'tha', attributes) end
    local sequence
    if lifo == '1' then
      sequence = ORDER_SPAN - (rcall('HINCRBY', stateKey, 'lifo', 1) % ORDER_SPAN)
    else
      sequence = ORDER_SPAN + (rcall('HINCRBY', stateKey, 'fifo', 1) % ORDER_SPAN)
    end
    local order = priority * 0x100000000 + sequence
    local classKey = classJobsKey(queueBase, member)
    rcall('ZADD', classKey, order, jobId)
    rcall('HINCRBY', stateKey, 'held', 1)
    if rcall('SADD', classesKey, member) == 1 then
      rcall('ZADD', readyKey, order, member)
    elseif tonumber(rcall('ZRANGE', classKey, 0, 0, 'WITHSCORES')[2]) == order then
      -- The job heads its class: move the class up wherever it waits.
      if rcall('ZADD', readyKey, 'XX', 'CH', order, member) == 0 then
        local _, buckets = parseClass(member)
        for _, bucket in ipairs(buckets) do rcall('ZADD', waitersKey(queueBase, bucket.id), 'XX', order, member) end
      end
    end
    placed = placed + 1
  end
end
if placed > 0 then rcall('ZADD', markerKey, 0, '0') end
return { placed }
