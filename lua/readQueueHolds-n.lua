--[[
  What the throttle layer holds of one queue, read at one moment so that its figures add up (QueueStats:
  src/admin/queueHolds.ts): no delivery script runs between the reads. Reads and writes nothing else.

  Input:
    KEYS[1] the queue's state (held, blocked)   KEYS[2] intake
    KEYS[3..] per throttle declared on the queue, its t:<T>:held (ZSET job -> ms it started waiting)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { held, blocked, classifying, oldest waiting start in ms ('' when none waits), now in ms }
]]
local rcall = redis.call

--- @include "includes/nowUs"

local state = rcall('HMGET', KEYS[1], 'held', 'blocked')
local oldest
for i = 3, #KEYS do
  local first = rcall('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
  if #first == 2 and (oldest == nil or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
end
return { tonumber(state[1]) or 0, tonumber(state[2]) or 0, rcall('ZCARD', KEYS[2]), oldest and tostring(oldest) or '', tostring(math.floor(nowUs() / 1000)) }
