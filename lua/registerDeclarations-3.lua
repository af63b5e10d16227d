--[[
  Records (or, with an empty entry, withdraws) one worker's throttle declarations, drops those whose
  worker stopped refreshing them, and returns every live one. Declarations are soft state: a worker
  refreshes its entry well within the time to live, so a crashed worker's entry lapses after at most ttl.
  The registry's version goes up with every change (an entry added, changed, withdrawn or lapsed), so that a
  config worked out from it can say how recent it is (publishQueueConfig refuses an older one).

  Input:
    KEYS[1] entries (HASH worker id -> declaration JSON)   KEYS[2] alive (ZSET worker id -> expiry ms)
    KEYS[3] version (STRING, a counter)
    ARGV[1] worker id   ARGV[2] declaration JSON ('' to withdraw)   ARGV[3] time to live (ms)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowMs, version, L, then worker id, JSON (nil when it has none) x L for the entries that lapsed just now (their
      queues' held jobs may need putting back: see releaseHeld), then worker id, JSON, ... for every live entry }
]]
local rcall = redis.call

--- @include "includes/nowUs"

local entriesKey, aliveKey, versionKey = KEYS[1], KEYS[2], KEYS[3]
local nowMs = math.floor(nowUs() / 1000)
local changed = false
if ARGV[2] == '' then
  changed = rcall('HDEL', entriesKey, ARGV[1]) == 1
  rcall('ZREM', aliveKey, ARGV[1])
else
  changed = rcall('HGET', entriesKey, ARGV[1]) ~= ARGV[2]
  if changed then rcall('HSET', entriesKey, ARGV[1], ARGV[2]) end
  rcall('ZADD', aliveKey, nowMs + tonumber(ARGV[3]), ARGV[1])
end
local lapsed = rcall('ZRANGEBYSCORE', aliveKey, '-inf', nowMs)
local lapsedEntries = {}
if #lapsed > 0 then
  lapsedEntries = rcall('HMGET', entriesKey, unpack(lapsed))
  rcall('HDEL', entriesKey, unpack(lapsed))
  rcall('ZREM', aliveKey, unpack(lapsed))
  changed = true
end
local version = changed and rcall('INCR', versionKey) or tonumber(rcall('GET', versionKey) or 0)
local reply = { nowMs, version, #lapsed }
for i, workerId in ipairs(lapsed) do
  reply[#reply + 1] = workerId
  reply[#reply + 1] = lapsedEntries[i]
end
local flat = rcall('HGETALL', entriesKey)
for i = 1, #flat do reply[#reply + 1] = flat[i] end
return reply
