--[[
  Notes that a throttle name is declared under a namespace, and answers the other namespaces of this Redis
  deployment where the same name is declared (a limit meant to be shared would be counted apart in each).
  Each entry lapses unless refreshed.

  Input:
    KEYS[1] the name's namespaces (ZSET namespace -> lapse ms)
    ARGV[1] namespace   ARGV[2] time to live (ms)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: the other namespaces with a live entry
]]
local rcall = redis.call

--- @include "includes/nowUs"

local key, namespace, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local nowMs = math.floor(nowUs() / 1000)
rcall('ZADD', key, nowMs + ttl, namespace)
rcall('ZREMRANGEBYSCORE', key, '-inf', nowMs)
rcall('PEXPIRE', key, 2 * ttl)
local others = {}
for _, member in ipairs(rcall('ZRANGE', key, 0, -1)) do
  if member ~= namespace then others[#others + 1] = member end
end
return others
