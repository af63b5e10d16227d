--[[
  Publishes what the live declarations add up to: each throttle's effective limits (shared by every
  queue that uses the throttle) and a queue's throttle set with its config generation. Limits are
  replaced whole, so a raised or lowered N applies from the next grant. What was worked out from an
  older registry version than what is stored is not written: a config older than the queue's is refused
  whole, and limits older than a throttle's stay as they are (a worker that read the registry before
  another registered must not undo that worker's declarations).

  Input:
    KEYS[1]     the queue's state (HASH)   KEYS[2] the queue's marker (a new generation wakes its workers)
    KEYS[3..]   one limits key (HASH window ms -> N, and v: the registry version) per throttle
    ARGV[1] generation ('' leaves the queue's config as it is)   ARGV[2] config JSON
    ARGV[3] the spec by which the delivery script classifies jobs itself ('' when it cannot; see
            includes/classifyInLua)   ARGV[4] limits time to live (ms)
    ARGV[5] the registry version the config was worked out from (registerDeclarations)
    ARGV[6] '1' to publish even so (the registry's version went back: its keys were lost or deleted)
    ARGV[7..]   per throttle (in KEYS order): count of limits, then window ms, N pairs

  Output: 1 when the queue's generation changed, 0 when it did not, -1 when the config was refused (an
  older registry version than the queue's)
]]
local rcall = redis.call

local version = tonumber(ARGV[5])
local stored
if ARGV[1] ~= '' then
  stored = rcall('HMGET', KEYS[1], 'gen', 'lua', 'regv')
  if tonumber(stored[3] or 0) > version and ARGV[6] ~= '1' then return -1 end
end

local at = 7
for k = 3, #KEYS do
  local count = tonumber(ARGV[at])
  if ARGV[6] == '1' or tonumber(rcall('HGET', KEYS[k], 'v') or 0) <= version then
    rcall('DEL', KEYS[k])
    for i = 1, count do rcall('HSET', KEYS[k], ARGV[at + 2 * i - 1], ARGV[at + 2 * i]) end
    rcall('HSET', KEYS[k], 'v', version)
    rcall('PEXPIRE', KEYS[k], tonumber(ARGV[4]))
  end
  at = at + 1 + 2 * count
end
if ARGV[1] == '' then return 0 end
rcall('HSET', KEYS[1], 'regv', version)
if stored[1] ~= ARGV[1] then
  rcall('HSET', KEYS[1], 'gen', ARGV[1], 'config', ARGV[2], 'lua', ARGV[3])
  rcall('ZADD', KEYS[2], 0, '0')
  return 1
end
if (stored[2] or '') ~= ARGV[3] then
  -- Same throttles, but a worker computing attributes came or went: who classifies changes.
  rcall('HSET', KEYS[1], 'lua', ARGV[3])
  rcall('ZADD', KEYS[2], 0, '0')
end
return 0
