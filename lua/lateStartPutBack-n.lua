--[[
  A job put back held because its processor would have started too late (src/worker/lateStarts/startDeadlines.ts): its
  delivery stops counting in the queue's statistics of each throttle it was noted in (includes/
  throttleStatsNotes: the total and the slot of :recent it went into), so that it counts once when it is
  delivered again, and the classes waiting on its buckets look again now (the job, back in wait, is delivered
  once it is classified; the tokens it was counted in were given back by lua/returnTokens-n.lua). It runs once
  the job is back in wait, marked to go first there (lua/markPutBack-2.lua). Every key is in the queue's slot.

  Input:
    KEYS[1] the queue's wakeups (ZSET bucket id -> us)   KEYS[2] its lease-room (HASH bucket id -> us)
    KEYS[3] bullmq's marker of the queue
    KEYS[4..] for each bucket of the job, the queue's :stats and :recent of the bucket's throttle
    ARGV[1] the delivery script's Redis time in ms (the slot of :recent it was noted in)
    ARGV[2..] for each bucket, its id ("<encoded name>=<bucket segment>"), in the order of KEYS[4..]
    (test builds read one more trailing ARGV, a clock offset in ms: the buckets are counted from KEYS)

  Output: the number of buckets woken
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/wakeBucket"

local grantMs = tonumber(ARGV[1])
local nowArg = intArg(nowUs())
local woken = 0
for i = 2, 1 + (#KEYS - 3) / 2 do
  local statsKey = KEYS[2 + 2 * (i - 1)]
  local recentKey = KEYS[3 + 2 * (i - 1)]
  -- Keys that lapsed or were never written (a throttle without a longest window yet) have nothing to take back.
  if tonumber(rcall('HGET', statsKey, 'delivered') or 0) > 0 then rcall('HINCRBY', statsKey, 'delivered', -1) end
  local longest = tonumber(rcall('HGET', statsKey, 'longest'))
  if longest then
    local slot = intArg(math.floor(grantMs / math.max(1, math.floor(longest / 60))))
    if tonumber(rcall('HGET', recentKey, slot) or 0) > 0 then rcall('HINCRBY', recentKey, slot, -1) end
  end
  if wakeBucket(KEYS[1], KEYS[2], ARGV[i], nowArg) then woken = woken + 1 end
end
if woken > 0 then rcall('ZADD', KEYS[3], 0, '0') end
return woken
