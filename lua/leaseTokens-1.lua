--[[
  The grantor of a throttle namespace: leases tokens for deliveries that queues in other slots (or on
  other Redis servers) will spend (takeLeasedJobs-19.lua). Each delivery names every bucket it draws from,
  with its cost there (a throttle's cost(); 1 by default); its tokens are granted together or not at all: n
  deliveries are granted only when every limit of every one of its buckets has room for n times the cost
  there, and are then counted in all of them at once (n * cost tokens in each). Each token counts
  against W + h (h: the lease of the asking worker), which absorbs that it may be spent up to h after this
  grant (rule 2: at most N granted in any window of W + h, so at most N spent in any window of W).
  Deliveries are decided in order, each seeing the tokens granted before it. The throttles' effective
  limits are read from their published :limits, as exact delivery reads them.

  A grantor that finds itself on a new node (a restart, a promoted replica) grants nothing until every
  token its predecessor granted is spent or expired and its counts are rebuilt from the queues' records
  (includes/grantorRecovery: rules 3 and 4); a queue that has not reported what it delivered is asked to.

  Input:
    KEYS[1]  the namespace's registry version key (any key of the namespace: it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] h, the lease (ms)
    ARGV[3]  the asking queue's id (prefix:queue)   ARGV[4] '1' when Redis keeps acknowledged writes (durableRedis)
    ARGV[5]  the asking worker's id (the holder of its concurrency units)   ARGV[6] a hold's lifetime (ms)
    ARGV[7]  the grantor's node identity the worker saw recorded ('' for none: includes/nodeIdentity)
    ARGV[8]  F, then F pairs: bucket id, units of the bucket's concurrency the worker holds and has free
    then     D, then per delivery: n wanted, refill ('1': leased ahead for a flowing class), c, then c buckets
             as a class names them ("<encoded throttle>=<bucket>", followed by "$<cost>" for a cost other than 1)
  A bucket with a concurrency (concurrency(n)) has room for what its jobs in flight and the holds of leased
  workers leave, plus the asking worker's free units; a grant uses those first and adds what it needs beyond
  them to the worker's hold (includes/inFlightCounter), which lapses a lifetime later unless renewed
  (renewHolds-1.lua).
  A refill takes at most half the room its buckets have left: a token leased ahead and not spent uses up
  allowance until it leaves the window, so the last of a bucket's room goes only to jobs that wait for it.
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { nowUs, status, then per delivery: granted, roomInMs, lacking, held }: status 0 (decided), 1 (report what the queue
    delivered lately first: reportQueueHistory-1.lua; nothing granted) or 2 (other workers or queues have not
    reported yet; nothing granted, roomInMs says when to ask again); granted deliveries (0..n); roomInMs, when fewer than n were
    granted, how long from now until one more would fit (at least 1), 0 when all were, -1 when a throttle
    of the delivery has no published limits (no live worker declares it: nothing is granted); lacking:
    the bucket id whose room comes last ('' when all were granted); held: "<j>:<units>,..." the units added to
    the worker's hold in the delivery's j-th bucket ('' for none).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/nodeIdentity"
--- @include "includes/bucketCounters"
--- @include "includes/grantorRecovery"
--- @include "includes/throttleIndexes"

local throttlePrefix, leaseMs, queueId, durable = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
local holder, holdMs = ARGV[5], tonumber(ARGV[6])
-- Units of concurrency the worker holds already and has free, by bucket: a grant uses those first.
local credit = {}
local at = 9
for _ = 1, tonumber(ARGV[8]) do
  credit[ARGV[at]] = tonumber(ARGV[at + 1])
  at = at + 2
end
local deliveries = tonumber(ARGV[at])
at = at + 1
local now = nowUs()
local nowMs = math.floor(now / 1000)
noticeGrantorChange(throttlePrefix, nowMs, leaseMs, durable, ARGV[7])
local gather = grantorGather.state(throttlePrefix, nowMs, queueId)
if gather then
  local reply = { now, gather == 'report' and 1 or 2 }
  for _ = 1, deliveries do
    reply[#reply + 1] = 0
    reply[#reply + 1] = 50
    reply[#reply + 1] = ''
    reply[#reply + 1] = ''
  end
  return reply
end
local reply = { now, 0 }
local touched = {}
for d = 1, deliveries do
  local wanted, refill, c = tonumber(ARGV[at]), ARGV[at + 1] == '1', tonumber(ARGV[at + 2])
  local sources, ids, costs, indexes, stale = {}, {}, {}, {}, false
  for j = 1, c do
    local bucket = parseBucketPart(ARGV[at + 2 + j])
    local counters = bucketCounters(throttlePrefix, bucket, now)
    if counters == nil then
      stale = true
    elseif bucket.cost > 0 then
      -- (A cost of 0, a job that fails as it is delivered, takes nothing there.)
      sources[#sources + 1] = counters
      ids[#sources], costs[#sources], indexes[#sources] = bucket.id, bucket.cost, j
    end
    touched[bucket.name] = true
  end
  at = at + 3 + c
  if stale then
    reply[#reply + 1] = 0
    reply[#reply + 1] = -1
    reply[#reply + 1] = ''
    reply[#reply + 1] = ''
  else
    local granted = wanted
    for i, counters in ipairs(sources) do
      local inFlight = counters.inFlight
      if inFlight then
        -- Free units count only as far as the worker's hold here is alive and holds them.
        inFlight.credit = math.min(credit[ids[i]] or 0, leasedHolds.heldBy(inFlight, holder, nowMs))
        -- Lapsed holds go before a grant of less than it asks for would be decided.
        inFlightRoom(inFlight, wanted * costs[i])
      end
      local room = bucketRoom(counters)
      if refill then room = math.floor(room / 2) end
      granted = math.min(granted, math.floor(room / costs[i]))
    end
    if granted < 0 then granted = 0 end
    local held = {}
    for i, counters in ipairs(sources) do
      addBucketTokens(counters, granted * costs[i], leaseMs)
      local inFlight = counters.inFlight
      if inFlight and granted > 0 then
        -- The worker's free units go first; what it lacks beyond them joins its hold.
        local used = granted * costs[i]
        local fromCredit = math.min(inFlight.credit, used)
        credit[ids[i]] = inFlight.credit - fromCredit
        if used > fromCredit then
          leasedHolds.add(inFlight, holder, used - fromCredit, nowMs, nowMs + holdMs)
          held[#held + 1] = indexes[i] .. ':' .. (used - fromCredit)
        end
      end
    end
    local roomInMs, lacking = 0, ''
    if granted < wanted then
      local roomAt = now
      for i, counters in ipairs(sources) do
        local when = bucketRoomAtUs(counters, costs[i])
        if when > roomAt then roomAt, lacking = when, ids[i] end
      end
      roomInMs = math.max(1, math.ceil((roomAt - now) / 1000))
    end
    for _, counters in ipairs(sources) do if counters.inFlight then counters.inFlight.credit = 0 end end
    reply[#reply + 1] = granted
    reply[#reply + 1] = roomInMs
    reply[#reply + 1] = lacking
    reply[#reply + 1] = table.concat(held, ',')
  end
end

saveBucketCounters()
-- Exact delivery prunes the bucket indexes once a stats slot; grants prune them as they come (two commands
-- per throttle per call).
for encodedName in pairs(touched) do
  local limits = throttleLimits(throttlePrefix, encodedName)
  if limits then
    local longest = 0
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    -- A rate's bucket stays active (its stored time ahead) for up to the time a burst takes to fill.
    if limits.rate and limits.rate.fillMs > longest then longest = limits.rate.fillMs end
    pruneThrottleIndexes(throttleBase(throttlePrefix, encodedName), nowMs, longest, limits.concurrency ~= nil)
  end
end
return reply
