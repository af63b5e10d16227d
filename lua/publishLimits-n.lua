--[[
  Publishes each throttle's effective limits (shared by every queue that uses the throttle), as the live
  declarations add up to them. Limits are replaced whole, so a raised or lowered N applies from the next
  grant. Limits worked out from an older registry version than a throttle's stay as they are (a worker that
  read the registry before another registered must not undo that worker's declarations).
  Every key is in the throttle namespace's slot.

  Input:
    KEYS[1..]  one limits key (HASH window ms -> N, and v: the registry version) per throttle
    ARGV[1] limits time to live (ms)   ARGV[2] the registry version they were worked out from
    ARGV[3] '1' to publish even so (the registry's version went back: its keys were lost or deleted)
    ARGV[4..]  per throttle (in KEYS order): count of limits, then window ms, N pairs

  Output: the number of throttles whose limits were written
]]
local rcall = redis.call

local version = tonumber(ARGV[2])
local force = ARGV[3] == '1'
local at, written = 4, 0
for k = 1, #KEYS do
  local count = tonumber(ARGV[at])
  if force or tonumber(rcall('HGET', KEYS[k], 'v') or 0) <= version then
    rcall('DEL', KEYS[k])
    for i = 1, count do rcall('HSET', KEYS[k], ARGV[at + 2 * i - 1], ARGV[at + 2 * i]) end
    rcall('HSET', KEYS[k], 'v', version)
    rcall('PEXPIRE', KEYS[k], tonumber(ARGV[1]))
    written = written + 1
  end
  at = at + 1 + 2 * count
end
return written
