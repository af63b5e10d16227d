--[[
  Returns granted tokens that will not be spent, so that they stop counting. Each token is returned per
  throttle: a throttle's returned-set remembers the token until its tokens would have been released anyway,
  which makes a second return of the same token a no-op.

  Input:
    KEYS[1..K]  returned-sets (ZSET: token nonce -> ms when it no longer matters), window counters and rates
    ARGV[1]     G, the number of (token, throttle) groups; then for each group:
                  set index, nonce, grantUs, leaseMs, c, then c pairs (counter index, window ms), a rate's
                  window being "r <n> <perMs> <burst>" (the rate it was granted at: a return gives back what
                  it took)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, s_1, ..., s_G }: s_g is 1 when group g's tokens stopped counting now, 0 when they had been
    returned already or were no longer counted.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"
--- @include "includes/rateCounter"
--- @include "includes/returnedSet"

local now = nowUs()
local counters = {}
local function counterAt(index, window)
  local counter = counters[index]
  if counter == nil then
    local rateText = string.match(window, '^r (%d+ %d+ %d+)$')
    if rateText then
      local rate = rateOf(rateText, 0)
      counter = { rate = loadRate(KEYS[index], rate, now), fillMs = rate.fillMs }
    else
      counter = loadCounter(KEYS[index], 0, tonumber(window), now)
    end
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
  local windows, rates = {}, {}
  for j = 1, c do
    local counter = counterAt(tonumber(ARGV[at + 3 + 2 * j]), ARGV[at + 4 + 2 * j])
    if counter.rate then rates[#rates + 1] = counter else windows[#windows + 1] = counter end
  end
  -- A rate's token is given back (its T taken off the bucket's TAT) only for as long as a burst takes to fill
  -- after it could be spent: a fixed time, so that the returned-set remembers it for as long as a return counts.
  local mattersMs = releasedMsOf(windows, grantUs, leaseMs)
  for _, counter in ipairs(rates) do mattersMs = math.max(mattersMs, math.ceil(grantUs / 1000) + counter.fillMs + leaseMs) end
  local returned = 0
  if markReturned(setKey, nonce, mattersMs, nowMs) then
    for _, counter in ipairs(windows) do
      if removeToken(counter, grantUs, leaseMs, now) then returned = 1 end
    end
    for _, counter in ipairs(rates) do
      if removeRateToken(counter.rate) then returned = 1 end
    end
  end
  reply[g + 1] = returned
  at = at + 5 + 2 * c
end

for _, counter in pairs(counters) do
  if counter.rate then saveRate(counter.rate) else saveCounter(counter) end
end
return reply
