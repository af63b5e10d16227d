--[[
  Pauses a throttle, or one bucket of it (ThrottleAdmin.pause, RetryAfterError): its buckets have no room
  until then, for every worker, from their next delivery call (includes/throttlePauses). A longer pause
  already set on the same field stays.

  Input:
    KEYS[1] the throttle's pauses (HASH, <throttle base>:paused)   KEYS[2] its limits (HASH: field p set)
    ARGV[1] '*' (every bucket) or a bucket segment
    ARGV[2] until (ms, Redis clock), or 0: until resumed
    ARGV[3] for (ms from now, on this node's clock), used instead when above 0 (RetryAfterError)

  Output: { nowMs, the pause now in force on that field (ms, 0: until resumed) }
]]
local rcall = redis.call

local time = rcall('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local field, untilMs = ARGV[1], tonumber(ARGV[2])
if tonumber(ARGV[3] or 0) > 0 then untilMs = nowMs + tonumber(ARGV[3]) end
local known = tonumber(rcall('HGET', KEYS[1], field) or -1)
if known == 0 or (known > untilMs and untilMs ~= 0) then untilMs = known end
rcall('HSET', KEYS[1], field, untilMs)
rcall('HSET', KEYS[2], 'p', '1')
-- The key lasts as long as its longest pause; an open-ended one keeps it until resumed.
local latest = 0
local flat = rcall('HGETALL', KEYS[1])
for i = 2, #flat, 2 do
  local value = tonumber(flat[i])
  if value == 0 then latest = -1 break end
  if value > latest then latest = value end
end
if latest < 0 then rcall('PERSIST', KEYS[1]) else rcall('PEXPIREAT', KEYS[1], latest) end
return { nowMs, untilMs }
