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
    then            the throttle namespace's key prefix, '1' when Redis keeps acknowledged writes, the Grantor's
                    id, how long (ms) a grant it makes now may count (its longest window and h), "<encoded
                    throttle>:<longest ms>,..." of every throttle it granted so far, and the node identity it saw
                    recorded before ('' for none: includes/nodeIdentity)
    (test builds read one more trailing ARGV, a clock offset in ms)

  The counters keep their throttles' bucket indexes (:active, :full: includes/bucketIndexes), pruned here.

  A paused bucket (ThrottleAdmin.pause, RetryAfterError: includes/throttlePauses) has no room until its
  pause ends.

  After a restart or promotion of this node (includes/nodeIdentity), the counters may lack grants counted
  just before: the namespace gathers what its workers, queues and Grantors remember (includes/grantorRecovery:
  this Grantor is expected from each call that granted until its grants left their windows), and each throttle
  is held as includes/recoveryHold says, or only for h and a margin when Redis keeps acknowledged writes.

  Output:
    { nowUs, epoch, r_1, ..., r_D }: nowUs is the Redis time of the grant; epoch the gather that holds a counter
    of the batch, when one does (the Grantor tells it what it granted: lua/reportDeliveries-1.lua), else '';
    r_d is 0 when delivery d was granted, else the earliest time in ms (Redis clock) at which it could fit,
    given what is counted now.
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
local nowMs = math.floor(now / 1000)
if counterCount > 0 then noticeGrantorChange(throttlePrefix, nowMs, leaseMs, durable, ARGV[tail + 5]) end
local anyHeld = false

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
  -- After a change of node: held as includes/recoveryHold says for this limit (its own window, a rate until a
  -- burst had time to fill).
  local heldUs
  if ARGV[2 * i + 2] == 'r' then
    local rate = rateOf(ARGV[2 * i + 1], math.max(leaseMs, limits.rateLeaseMs))
    counters[i] = { rate = loadRate(KEYS[i], rate, now, base, bucket), fillMs = rate.fillMs }
    heldUs = recoveryHeldUntilUs(throttlePrefix, string.sub(base, #throttlePrefix + 1), { rate = rate })
  else
    local windowMs = tonumber(ARGV[2 * i + 2])
    counters[i] = loadCounter(KEYS[i], tonumber(ARGV[2 * i + 1]), windowMs, now)
    counters[i].statsBase, counters[i].bucket = base, bucket
    heldUs = recoveryHeldUntilUs(throttlePrefix, string.sub(base, #throttlePrefix + 1), { { windowMs = windowMs } })
  end
  -- A paused bucket (includes/throttlePauses) is held until its pause ends.
  heldUs = math.max(heldUs, pausedUntilUs(base, bucket, limits.paused, now))
  if heldUs > now then
    counters[i].heldUntilUs = heldUs
    anyHeld = true
  end
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

local reply = { now, '' }
local deliveries = tonumber(ARGV[at])
local grantedAny = false
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
    reply[d + 2] = 0
    grantedAny = true
  else
    local retryUs = now
    for j = 1, c do
      local counter, cost = counters[tonumber(ARGV[at + 2 * j - 1])], tonumber(ARGV[at + 2 * j])
      local roomUs = roomAt(counter, cost)
      if roomUs > retryUs then retryUs = roomUs end
    end
    reply[d + 2] = math.ceil(retryUs / 1000)
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
-- A gather after a change of node expects this Grantor until every grant it made here left its windows.
if grantedAny then grantorGather.noteApiGrants(throttlePrefix, ARGV[tail + 2], nowMs + tonumber(ARGV[tail + 3]), ARGV[tail + 4]) end
if anyHeld then
  local fields = rcall('HMGET', throttlePrefix .. ':grantor', 'hold', 'gathering')
  if fields[1] == 'gather' and fields[2] then reply[2] = fields[2] end
end
return reply
