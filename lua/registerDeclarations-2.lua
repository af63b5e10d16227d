--[[
  Records (or, with an empty entry, withdraws) one worker's throttle declarations, drops those whose
  worker stopped refreshing them, and returns every live one. Declarations are soft state: a worker
  refreshes its entry well within the time to live, so a crashed worker's entry lapses after at most ttl.

  Input:
    KEYS[1] entries (HASH worker id -> declaration JSON)   KEYS[2] alive (ZSET worker id -> expiry ms)
    ARGV[1] worker id   ARGV[2] declaration JSON ('' to withdraw)   ARGV[3] time to live (ms)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowMs, L, lapsed worker id x L, then worker id, JSON, worker id, JSON, ... for every live entry }
]]
local rcall = redis.call

--- @include "includes/nowUs"

local entriesKey, aliveKey = KEYS[1], KEYS[2]
local nowMs = math.floor(nowUs() / 1000)
if ARGV[2] == '' then
  rcall('HDEL', entriesKey, ARGV[1])
  rcall('ZREM', aliveKey, ARGV[1])
else
  rcall('HSET', entriesKey, ARGV[1], ARGV[2])
  rcall('ZADD', aliveKey, nowMs + tonumber(ARGV[3]), ARGV[1])
end
local lapsed = rcall('ZRANGEBYSCORE', aliveKey, '-inf', nowMs)
if #lapsed > 0 then
  rcall('HDEL', entriesKey, unpack(lapsed))
  rcall('ZREM', aliveKey, unpack(lapsed))
end
local reply = { nowMs, #lapsed }
for _, workerId in ipairs(lapsed) do reply[#reply + 1] = workerId end
local flat = rcall('HGETALL', entriesKey)
for i = 1, #flat do reply[#reply + 1] = flat[i] end
return reply
