--[[
  Grants a batch of deliveries against sliding-window throttle buckets, each one all or nothing:
  a delivery is granted only when every limit of every bucket it draws from has room, and then
  one token is counted in all of them at once; otherwise nothing is counted for it.
  Deliveries are decided in order, each seeing the tokens granted before it in the batch.

  Input:
    KEYS[1..K]      window counters, one HASH per (bucket, limit)
    ARGV[1]         leaseMs (h): a token counts against a window of W + h
    ARGV[2]         K, the number of counters
    ARGV[3..2K+2]   for counter i: max N (ARGV[2i+1]) and window W in ms (ARGV[2i+2])
    ARGV[2K+3]      D, the number of deliveries; then for each: c, followed by c counter indices (1-based)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, r_1, ..., r_D }: nowUs is the Redis time of the grant; r_d is 0 when delivery d was granted,
    else the earliest time in ms (Redis clock) at which it could fit, given what is counted now.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"

local now = nowUs()
local leaseMs = tonumber(ARGV[1])
local counterCount = tonumber(ARGV[2])
local counters = {}
for i = 1, counterCount do
  counters[i] = loadCounter(KEYS[i], tonumber(ARGV[2 * i + 1]), tonumber(ARGV[2 * i + 2]), now)
end

local reply = { now }
local at = 2 * counterCount + 3
local deliveries = tonumber(ARGV[at])
at = at + 1
for d = 1, deliveries do
  local c = tonumber(ARGV[at])
  local fits = true
  for j = 1, c do
    local counter = counters[tonumber(ARGV[at + j])]
    if not hasRoom(counter) then fits = false end
  end
  if fits then
    for j = 1, c do
      local counter = counters[tonumber(ARGV[at + j])]
      addToken(counter, leaseMs)
    end
    reply[d + 1] = 0
  else
    local retryUs = now
    for j = 1, c do
      local counter = counters[tonumber(ARGV[at + j])]
      local roomUs = roomAtUs(counter)
      if roomUs > retryUs then retryUs = roomUs end
    end
    reply[d + 1] = math.ceil(retryUs / 1000)
  end
  at = at + c + 1
end

for i = 1, counterCount do saveCounter(counters[i]) end
return reply
