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

--- @include "includes/nowUs"
--- @include "includes/expireWithLatest"

local nowMs = math.floor(nowUs() / 1000)
local field, untilMs = ARGV[1], tonumber(ARGV[2])
if tonumber(ARGV[3] or 0) > 0 then untilMs = nowMs + tonumber(ARGV[3]) end
local known = tonumber(rcall('HGET', KEYS[1], field) or -1)
if known == 0 or (known > untilMs and untilMs ~= 0) then untilMs = known end
rcall('HSET', KEYS[1], field, untilMs)
rcall('HSET', KEYS[2], 'p', '1')
-- The key lasts as long as its longest pause; an open-ended one keeps it until resumed.
expireWithLatest(KEYS[1], tonumber)
return { nowMs, untilMs }
