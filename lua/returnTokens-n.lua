--[[
  Returns granted tokens that will not be spent, so that they stop counting. Each token is returned per
  throttle: a throttle's returned-set remembers the token until its tokens would have been released anyway,
  which makes a second return of the same token a no-op.

  Input:
    KEYS[1..K]  returned-sets (ZSET: token nonce -> ms when it no longer matters), window counters and rates
    ARGV[1]     G, the number of (token, throttle) groups; then for each group:
                  set index, nonce, grantUs, leaseMs, count (the tokens the grant took: its cost), c, then c
                  pairs (counter index, window ms), then the index of the bucket's rate (0: none; a rate keeps
                  returned tokens counted, includes/rateCounter says why) and, when one is named, the TATs
                  (us) its grant read and wrote: the grant is undone while it is the rate's latest
    (test builds read one more trailing ARGV, a clock offset in ms)
  The windows are lone counters, named by key (no limits are read): each takes its tokens back itself
  (includes/windowCounter's removeTokens, which windowKind.giveBack applies to a bucket's windows); a rate's
  grant is undone by rateKind.giveBack (includes/rateCounter).

  Output:
    { nowUs, s_1, ..., s_G }: s_g is 1 when group g's tokens stopped counting now, 0 when they had been
    returned already or were no longer counted.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"
--- @include "includes/rateCounter"
--- @include "includes/returnedSet"
--- @include "includes/intArg"

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
  local count = tonumber(ARGV[at + 4])
  local c = tonumber(ARGV[at + 5])
  if not swept[setKey] then
    rcall('ZREMRANGEBYSCORE', setKey, '-inf', nowMs)
    swept[setKey] = true
  end
  local group = {}
  for j = 1, c do group[j] = counterAt(tonumber(ARGV[at + 4 + 2 * j]), tonumber(ARGV[at + 5 + 2 * j])) end
  local rateIndex = tonumber(ARGV[at + 6 + 2 * c])
  local rateBefore, rateAfter = tonumber(ARGV[at + 7 + 2 * c]), tonumber(ARGV[at + 8 + 2 * c])
  -- A rate's grant matters while its TAT can refuse a delivery: until TAT + the lease (includes/rateCounter).
  local mattersMs = releasedMsOf(group, grantUs, leaseMs)
  if rateIndex > 0 then mattersMs = math.max(mattersMs, math.ceil(rateAfter / 1000) + leaseMs) end
  local returned = 0
  if markReturned(setKey, nonce, mattersMs, nowMs) then
    for _, counter in ipairs(group) do
      if removeTokens(counter, grantUs, leaseMs, now, count) > 0 then returned = 1 end
    end
    if rateIndex > 0 and rateKind.giveBack(KEYS[rateIndex], rateBefore, rateAfter) then returned = 1 end
  end
  reply[g + 1] = returned
  at = at + 7 + 2 * c + (rateIndex > 0 and 2 or 0)
end

for _, counter in pairs(counters) do saveCounter(counter) end
return reply
