--[[
  Grants a batch of deliveries against sliding-window throttle buckets, each one all or nothing:
  a delivery is granted only when every limit of every bucket it draws from has room for its cost there
  (1 token, or what the bucket's cost says), and then its tokens are counted in all of them at once;
  otherwise nothing is counted for it.
  Deliveries are decided in order, each seeing the tokens granted before it in the batch.

  Input:
    KEYS[1..K]      counters, one per (bucket, limit): a window counter (HASH), or a rate (STRING
                    <throttle base>:b:<bucket>:r, includes/rateCounter)
    ARGV[1]         leaseMs (h): a token counts against a window of W + h
    ARGV[2]         K, the number of counters
    ARGV[3..2K+2]   for counter i: max N (ARGV[2i+1]) and window W in ms (ARGV[2i+2]); for a rate,
                    "n perMs burst" and 'r' (granted short of its burst by h, or by the published lease of
                    the throttle's leased workers, the limits' rh, when longer)
    ARGV[2K+3]      D, the number of deliveries; then for each: c, followed by c pairs (counter index, 1-based;
                    cost: the tokens the delivery takes from that counter)
    then            the throttle namespace's key prefix, and '1' when Redis keeps acknowledged writes
    (test builds read one more trailing ARGV, a clock offset in ms)

  The counters keep their throttles' bucket indexes (:active, :full: includes/bucketIndexes), pruned here.

  A paused bucket (ThrottleAdmin.pause, RetryAfterError: includes/throttlePauses) has no room until its
  pause ends.

  After a restart or promotion of this node (includes/nodeIdentity), the counters may lack grants counted
  just before: every limit then holds for its window (and h and a margin), or only for h and a margin when
  Redis keeps acknowledged writes (includes/recoveryHold, includes/grantorRecovery).

  Output:
    { nowUs, r_1, ..., r_D }: nowUs is the Redis time of the grant; r_d is 0 when delivery d was granted,
    else the earliest time in ms (Redis clock) at which it could fit, given what is counted now.
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/rateCounter"
--- @include "includes/throttlePauses"
--- @include "includes/nodeIdentity"
--- @include "includes/recoveryHold"
--- @include "includes/grantorRecovery"
--- @include "includes/throttleIndexes"

local now = nowUs()
local leaseMs = tonumber(ARGV[1])
local counterCount = tonumber(ARGV[2])

-- Past the deliveries: the namespace, for the node identity check and any hold it began.
local at = 2 * counterCount + 3
local tail = at + 1
for _ = 1, tonumber(ARGV[at]) do tail = tail + 2 * tonumber(ARGV[tail]) + 1 end
local throttlePrefix, durable = ARGV[tail], ARGV[tail + 1] == '1'
local heldUntilMs, windowHold = 0, false
if counterCount > 0 then
  local nowMs = math.floor(now / 1000)
  noticeGrantorChange(throttlePrefix, nowMs, leaseMs, durable, true)
  -- Nobody remembers this API's grants but this node: after a restart, the namespace holds for its windows
  -- rather than for the workers' reports (includes/grantorRecovery).
  rcall('HSETNX', throttlePrefix .. ':grantor', 'apiGrants', '1')
  local fields = rcall('HMGET', throttlePrefix .. ':grantor', 'holdFrom', 'hold', 'holdMs')
  if fields[1] then heldUntilMs = tonumber(fields[1]) + (tonumber(fields[3]) or 0) end
  windowHold = fields[2] == 'window' or fields[2] == 'gather'
end

local counters = {}
-- Per throttle (its key base): whether it has pauses (its limits' field p), the lease its rate is granted
-- short of (rh), and whether it has a concurrency (c: its indexes may hold buckets it holds), read once.
local published = {}
for i = 1, counterCount do
  -- The counter's key is <base>:b:<bucket>:<W or r>, and a bucket segment holds no ':'.
  local base, bucket = string.match(KEYS[i], '^(.*):b:([^:]*):[^:]*$')
  local limits = published[base]
  if limits == nil then
    local fields = rcall('HMGET', base .. ':limits', 'p', 'rh', 'c')
    limits = { paused = fields[1] ~= false, rateLeaseMs = tonumber(fields[2]) or 0, concurrency = fields[3] ~= false }
    published[base] = limits
  end
  local untilMs
  if ARGV[2 * i + 2] == 'r' then
    local rate = rateOf(ARGV[2 * i + 1], math.max(leaseMs, limits.rateLeaseMs))
    counters[i] = { rate = loadRate(KEYS[i], rate, now, base, bucket), fillMs = rate.fillMs }
    -- A rate is not counted again after a failover: held until a burst had time to fill.
    untilMs = heldUntilMs + rate.fillMs
  else
    local windowMs = tonumber(ARGV[2 * i + 2])
    counters[i] = loadCounter(KEYS[i], tonumber(ARGV[2 * i + 1]), windowMs, now)
    counters[i].statsBase, counters[i].bucket = base, bucket
    -- A held limit has no room until its hold ends: its own window past the hold's start, when the hold is for a window.
    untilMs = heldUntilMs + (windowHold and windowMs or 0)
  end
  local heldUs = heldUntilMs > 0 and untilMs * 1000 or 0
  -- A paused bucket (includes/throttlePauses) is held until its pause ends.
  heldUs = math.max(heldUs, pausedUntilUs(base, bucket, limits.paused, now))
  if heldUs > now then counters[i].heldUntilUs = heldUs end
end

local function roomFor(counter, cost)
  if counter.heldUntilUs then return false end
  if counter.rate then return rateRoomAtUs(counter.rate, cost) == 0 end
  return hasRoomFor(counter, cost)
end

local function roomAt(counter, cost)
  if counter.heldUntilUs then return counter.heldUntilUs end
  if counter.rate then return rateRoomAtUs(counter.rate, cost) end
  return roomAtUs(counter, cost)
end

local reply = { now }
local deliveries = tonumber(ARGV[at])
at = at + 1
for d = 1, deliveries do
  local c = tonumber(ARGV[at])
  local fits = true
  for j = 1, c do
    local counter, cost = counters[tonumber(ARGV[at + 2 * j - 1])], tonumber(ARGV[at + 2 * j])
    if not roomFor(counter, cost) then fits = false end
  end
  if fits then
    for j = 1, c do
      local counter, cost = counters[tonumber(ARGV[at + 2 * j - 1])], tonumber(ARGV[at + 2 * j])
      if counter.rate then
        addRateTokens(counter.rate, cost)
      else
        addTokens(counter, cost, leaseMs)
      end
    end
    reply[d + 1] = 0
  else
    local retryUs = now
    for j = 1, c do
      local counter, cost = counters[tonumber(ARGV[at + 2 * j - 1])], tonumber(ARGV[at + 2 * j])
      local roomUs = roomAt(counter, cost)
      if roomUs > retryUs then retryUs = roomUs end
    end
    reply[d + 1] = math.ceil(retryUs / 1000)
  end
  at = at + 2 * c + 1
end

-- Per throttle base, the longest its buckets stay in its indexes: its longest window, or its rate's fill time.
local longest = {}
for i = 1, counterCount do
  local counter, span = counters[i], nil
  if counter.rate then
    saveRate(counter.rate)
    span = counter.fillMs
  else
    saveCounter(counter)
    span = counter.g.windowMs
  end
  local base = counter.rate and counter.rate.statsBase or counter.statsBase
  if span > (longest[base] or 0) then longest[base] = span end
end
bucketIndexes.flush()
for base, span in pairs(longest) do pruneThrottleIndexes(base, math.floor(now / 1000), span, published[base].concurrency) end
return reply
