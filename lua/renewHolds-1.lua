--[[
  Renews, lowers or drops what one leased worker holds of its throttles' concurrency (includes/inFlightCounter):
  each bucket's hold becomes the units the worker says it holds (its jobs in flight and the free units it
  keeps), lapsing a lifetime from now unless renewed again. The worker is the only writer of its holds and
  makes one such call (or one grant, lua/leaseTokens-1.lua) at a time, so what it says is what it holds: a
  grant whose reply it lost, counted here but unknown to it, stops counting at its next renewal.
  A lowered hold wakes the exact queues whose classes wait on the bucket, as a job's release does; leased
  workers waiting ask again when the grantor said they could (within a second: includes/inFlightCounter).

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] the worker's id (the holder)
    ARGV[3]  a hold's lifetime (ms)   ARGV[4] H, then H triples: bucket id, units held (0: none), of those
             the units its jobs in flight use
    (test builds read one more trailing ARGV, a clock offset in ms)

  A hold that lapsed here (the worker's renewals did not arrive for a lifetime: it spends no unit past that by
  its own clock) is not renewed as it was: what it held may have been granted to others since. Its jobs in
  flight are counted again (they run, whatever is counted) and the worker drops its free units.

  Output: { nowMs, the units this node counted for the worker before (summed over the buckets named), then
  the bucket ids whose hold had lapsed }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"

local throttlePrefix, holder, holdMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowUs()
local nowMs = math.floor(now / 1000)
local before = 0
local reply = { nowMs, 0 }
local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local bucket, units, inUse = parseBucketId(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  at = at + 3
  local counters = bucketCounters(throttlePrefix, bucket, now)
  -- A throttle no longer declared, or without a concurrency now, counts no hold.
  if counters and counters.inFlight then
    local inFlight = counters.inFlight
    local old = tonumber(rcall('HGET', inFlight.key, '~' .. holder)) or 0
    before = before + old
    if units > 0 and leasedHolds.heldBy(inFlight, holder, nowMs) == 0 then
      -- Lapsed (or lost): its free units may be others' by now. Its jobs in flight run whatever is counted,
      -- so they are counted again, and the worker is told to drop the rest.
      units = inUse
      reply[#reply + 1] = bucket.id
    end
    leasedHolds.set(inFlight, holder, units, nowMs + holdMs)
    if units < old then leasedHolds.wakeWaiting(inFlight.key, bucket.id, now) end
  end
end
saveBucketCounters()
reply[2] = before
return reply
