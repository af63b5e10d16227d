--[[
  Returns granted tokens that will not be spent, so that they stop counting. Each token is returned per
  throttle: a throttle's returned-set remembers the token until its tokens would have been released anyway,
  which makes a second return of the same token a no-op.

  Input:
    KEYS[1..K]  returned-sets (ZSET: token nonce -> ms when it no longer matters) and window counters
    ARGV[1]     G, the number of (token, throttle) groups; then for each group:
                  set index, nonce, grantUs, leaseMs, c, then c pairs (counter index, window ms)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, s_1, ..., s_G }: s_g is 1 when group g's tokens stopped counting now, 0 when they had been
    returned already or were no longer counted.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"

local now = nowUs()
local counters = {}
local function counterAt(index, windowMs)
  local counter = counters[index]
  if counter == nil then
    counter = loadCounter(KEYS[index], 0, windowMs, now)
    counters[index] = counter
  end
  return counter
end

local reply = { now }
local groups = tonumber(ARGV[1])
local at = 2
local nowMs = math.floor(now / 1000)
local swept = {}
for g = 1, groups do
  local setKey = KEYS[tonumber(ARGV[at])]
  local nonce = ARGV[at + 1]
  local grantUs = tonumber(ARGV[at + 2])
  local leaseMs = tonumber(ARGV[at + 3])
  local c = tonumber(ARGV[at + 4])
  if not swept[setKey] then
    rcall('ZREMRANGEBYSCORE', setKey, '-inf', nowMs)
    swept[setKey] = true
  end
  local matters = 0
  for j = 1, c do
    local counter = counterAt(tonumber(ARGV[at + 3 + 2 * j]), tonumber(ARGV[at + 4 + 2 * j]))
    local k = slotOf(counter, grantUs, leaseMs)
    local releasedMs = math.ceil(k * counter.g.slot / 1000)
    if releasedMs > matters then matters = releasedMs end
  end
  local returned = 0
  if matters > nowMs and rcall('ZADD', setKey, 'NX', matters, nonce) == 1 then
    for j = 1, c do
      local counter = counterAt(tonumber(ARGV[at + 3 + 2 * j]), tonumber(ARGV[at + 4 + 2 * j]))
      if removeToken(counter, grantUs, leaseMs, now) then returned = 1 end
    end
    local expiresAt = tonumber(rcall('ZRANGE', setKey, -1, -1, 'WITHSCORES')[2])
    rcall('PEXPIREAT', setKey, expiresAt)
  end
  reply[g + 1] = returned
  at = at + 5 + 2 * c
end

for _, counter in pairs(counters) do saveCounter(counter) end
return reply
