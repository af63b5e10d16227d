--[[
  The grantor of a throttle namespace: leases tokens for deliveries that queues in other slots (or on
  other Redis servers) will spend (takeLeasedJobs-19.lua). Each delivery names every bucket it draws from;
  tokens for it are granted together or not at all: n tokens are granted only when every limit of every
  one of its buckets has room for n, and are then counted in all of them at once. Each token counts
  against W + h (h: the lease of the asking worker), which absorbs that it may be spent up to h after this
  grant (rule 2: at most N granted in any window of W + h, so at most N spent in any window of W).
  Deliveries are decided in order, each seeing the tokens granted before it. The throttles' effective
  limits are read from their published :limits, as exact delivery reads them.

  Input:
    KEYS[1]  the namespace's registry version key (any key of the namespace: it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] h, the lease (ms)
    ARGV[3]  D, then per delivery: n wanted, c, then c bucket ids ("<encoded throttle>=<bucket>")
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, then per delivery: granted, roomInMs }: granted tokens (0..n); roomInMs, when fewer than n were
    granted, how long from now until one more would fit (at least 1), 0 when all were, -1 when a throttle
    of the delivery has no published limits (no live worker declares it: nothing is granted).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/throttleIndexes"

local throttlePrefix, leaseMs = ARGV[1], tonumber(ARGV[2])
local now = nowUs()
local nowMs = math.floor(now / 1000)
local reply = { now }
local touched = {}
local at = 4
for d = 1, tonumber(ARGV[3]) do
  local wanted, c = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  local sources, stale = {}, false
  for j = 1, c do
    local bucket = parseBucketId(ARGV[at + 1 + j])
    local counters = bucketCounters(throttlePrefix, bucket, now)
    if counters == nil then stale = true else sources[#sources + 1] = counters end
    touched[bucket.name] = true
  end
  at = at + 2 + c
  if stale then
    reply[#reply + 1] = 0
    reply[#reply + 1] = -1
  else
    local granted = wanted
    for _, counters in ipairs(sources) do granted = math.min(granted, bucketRoom(counters)) end
    if granted < 0 then granted = 0 end
    for _, counters in ipairs(sources) do
      for _, counter in ipairs(counters) do
        for _ = 1, granted do addToken(counter, leaseMs) end
      end
    end
    local roomInMs = 0
    if granted < wanted then
      local roomAt = now
      for _, counters in ipairs(sources) do
        local when = bucketRoomAtUs(counters)
        if when > roomAt then roomAt = when end
      end
      roomInMs = math.max(1, math.ceil((roomAt - now) / 1000))
    end
    reply[#reply + 1] = granted
    reply[#reply + 1] = roomInMs
  end
end

saveBucketCounters()
flushActiveIndexes()
-- Exact delivery prunes the bucket indexes once a stats slot; grants prune them as they come (two commands
-- per throttle per call).
for encodedName in pairs(touched) do
  local limits = throttleLimits(throttlePrefix, encodedName)
  if limits then
    local longest = 0
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    pruneThrottleIndexes(throttleBase(throttlePrefix, encodedName), nowMs, longest)
  end
end
return reply
