--[[
  Sets or clears limits at run time (ThrottleAdmin.setLimits, clearLimits): for the whole throttle, or one
  bucket (a plan tier), replacing the declared window limits until cleared or until they expire
  (includes/limitOverrides). The whole throttle's are written into its limits at once, so every grant from the
  next on uses them; a bucket's are read with its counters.

  Input:
    KEYS[1] the throttle's overrides (HASH)   KEYS[2] its limits (HASH; d: the declared windows)
    ARGV[1] '*' or a bucket segment; '' with ARGV[2] '': every override of the throttle
    ARGV[2] "W:N,W:N..." to set, '' to clear
    ARGV[3] until (ms, Redis clock; 0: until cleared), or ARGV[4] for (ms from now) when above 0

  Output: { nowMs, overrides left }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/limitOverrides"
--- @include "includes/expireWithLatest"

local nowMs = math.floor(nowUs() / 1000)
local field, windows = ARGV[1], ARGV[2]
if windows == '' then
  if field == '' then rcall('DEL', KEYS[1]) else rcall('HDEL', KEYS[1], field) end
else
  local untilMs = tonumber(ARGV[3])
  if tonumber(ARGV[4]) > 0 then untilMs = nowMs + tonumber(ARGV[4]) end
  rcall('HSET', KEYS[1], field, untilMs .. '|' .. windows)
end
-- The key lasts as long as its longest override; an open-ended one keeps it until cleared.
expireWithLatest(KEYS[1], function(value) return tonumber(string.match(value, '^(%d+)|')) end)
if rcall('EXISTS', KEYS[2]) == 1 then
  local declared = {}
  for w, n in string.gmatch(rcall('HGET', KEYS[2], 'd') or '', '(%d+):(%d+)') do declared[tonumber(w)] = tonumber(n) end
  writeWindowLimits(KEYS[2], KEYS[1], declared, nowMs)
end
return { nowMs, rcall('HLEN', KEYS[1]) }
