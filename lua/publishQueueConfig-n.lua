--[[
  Publishes what the live declarations add up to: each throttle's effective limits (shared by every
  queue that uses the throttle) and a queue's throttle set with its config generation. Limits are
  replaced whole, so a raised or lowered N applies from the next grant.

  Input:
    KEYS[1]     the queue's state (HASH)   KEYS[2] the queue's marker (a new generation wakes its workers)
    KEYS[3..]   one limits key (HASH window ms -> N) per throttle
    ARGV[1] generation ('' leaves the queue's config as it is)   ARGV[2] config JSON
    ARGV[3] the spec by which the delivery script classifies jobs itself ('' when it cannot; see
            includes/classifyInLua)   ARGV[4] limits time to live (ms)
    ARGV[5..]   per throttle (in KEYS order): count of limits, then window ms, N pairs

  Output: 1 when the queue's generation changed, else 0
]]
local rcall = redis.call

local at = 5
for k = 3, #KEYS do
  local count = tonumber(ARGV[at])
  rcall('DEL', KEYS[k])
  for i = 1, count do rcall('HSET', KEYS[k], ARGV[at + 2 * i - 1], ARGV[at + 2 * i]) end
  rcall('PEXPIRE', KEYS[k], tonumber(ARGV[4]))
  at = at + 1 + 2 * count
end
local changed = 0
if ARGV[1] ~= '' then
  local stored = rcall('HMGET', KEYS[1], 'gen', 'lua')
  if stored[1] ~= ARGV[1] then
    rcall('HSET', KEYS[1], 'gen', ARGV[1], 'config', ARGV[2], 'lua', ARGV[3])
    rcall('ZADD', KEYS[2], 0, '0')
    changed = 1
  elseif (stored[2] or '') ~= ARGV[3] then
    -- Same throttles, but a worker computing attributes came or went: who classifies changes.
    rcall('HSET', KEYS[1], 'lua', ARGV[3])
    rcall('ZADD', KEYS[2], 0, '0')
  end
end
return changed
