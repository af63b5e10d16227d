--[[
  Publishes a queue's throttle set with its config generation, and keeps the calling worker in the queue's
  set of live ThrottledWorkers (which releaseHeld reads). A config worked out from an older registry
  version than the queue's is refused whole. Every key is in the queue's own slot; the throttles' limits
  are published apart, in the namespace's slot (publishLimits).

  Input:
    KEYS[1] the queue's state (HASH)   KEYS[2] the queue's marker (a new generation wakes its workers)
    KEYS[3] the queue's workers (ZSET worker id -> lapse ms, this Redis's clock)
    KEYS[4..] per throttle of the config, the queue's statistics HASH of it (includes/throttleStatsNotes)
    ARGV[1] generation ('' leaves the queue's config as it is)   ARGV[2] config JSON
    ARGV[3] the spec by which the delivery script classifies jobs itself ('' when it cannot; see
            includes/classifyInLua)
    ARGV[4] the registry version the config was worked out from (registerDeclarations)
    ARGV[5] '1' to publish even so (the registry's version went back: its keys were lost or deleted)
    ARGV[6] worker id   ARGV[7] how long its entry lives (ms; 0 withdraws it)
    ARGV[8] the throttles' longest waits, "<encoded name>=<ms>,..." ('' when none declares maxWait): the
            state's field mw, which the delivery scripts give held jobs their deadlines by (includes/deadlines)
    ARGV[9] '1' when the queue's workers declare a fairness key ('' otherwise): the state's field fair, by which the
            delivery scripts keep its virtual time (includes/fairness)
    ARGV[10..] per throttle (in KEYS order from KEYS[4]): its longest window (ms)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: 1 when the queue's generation changed, 0 when it did not, -1 when the config was refused (an
  older registry version than the queue's)
]]
local rcall = redis.call

--- @include "includes/nowUs"

local STATS_TTL_MS = 86400000
local stateKey, markerKey, workersKey = KEYS[1], KEYS[2], KEYS[3]
local version = tonumber(ARGV[4])
local nowMs = math.floor(nowUs() / 1000)
local ttlMs = tonumber(ARGV[7])
if ttlMs > 0 then
  rcall('ZADD', workersKey, nowMs + ttlMs, ARGV[6])
else
  rcall('ZREM', workersKey, ARGV[6])
end
rcall('ZREMRANGEBYSCORE', workersKey, '-inf', nowMs)

if ARGV[1] == '' then return 0 end
local stored = rcall('HMGET', stateKey, 'gen', 'lua', 'regv')
if tonumber(stored[3] or 0) > version and ARGV[5] ~= '1' then return -1 end
-- The queue's statistics of its throttles outlive its last worker by a day (totals, for whoever looks later).
for k = 4, #KEYS do
  rcall('HSET', KEYS[k], 'longest', ARGV[6 + k])
  rcall('PEXPIRE', KEYS[k], STATS_TTL_MS)
end
rcall('HSET', stateKey, 'regv', version)
if ARGV[8] == '' then rcall('HDEL', stateKey, 'mw') else rcall('HSET', stateKey, 'mw', ARGV[8]) end
if ARGV[9] == '' then rcall('HDEL', stateKey, 'fair') else rcall('HSET', stateKey, 'fair', ARGV[9]) end
if stored[1] ~= ARGV[1] then
  rcall('HSET', stateKey, 'gen', ARGV[1], 'config', ARGV[2], 'lua', ARGV[3])
  rcall('ZADD', markerKey, 0, '0')
  return 1
end
if (stored[2] or '') ~= ARGV[3] then
  -- Same throttles, but a worker computing attributes came or went: who classifies changes.
  rcall('HSET', stateKey, 'lua', ARGV[3])
  rcall('ZADD', markerKey, 0, '0')
end
return 0
