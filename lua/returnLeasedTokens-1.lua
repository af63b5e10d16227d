--[[
  Gives back to the namespace's grantor leased tokens that no queue will spend (refused on deposit, more
  than the class had jobs for, or withdrawn from a pool by the queue's last closing worker): they stop
  counting at once. A queue takes a token out of its pools before returning it, so a returned token can
  never also be spent. Each group is returned once per throttle: the throttle's returned-set remembers its
  nonce until its tokens would have been released anyway, so a second return is a no-op.
  Counters are found from the throttle's published limits; a window no longer declared has nothing to return,
  and a rate keeps returned tokens counted (includes/rateCounter says why).

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix
    ARGV[2]  G, then G groups of 5: bucket id, grantUs, leaseMs (h, as granted), nonce, count
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowUs, returned } the tokens that stopped counting (per bucket, summed)
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/returnedSet"

local throttlePrefix = ARGV[1]
local now = nowUs()
local nowMs = math.floor(now / 1000)
local returned = 0
local at = 3
for _ = 1, tonumber(ARGV[2]) do
  local bucket = parseBucketId(ARGV[at])
  local grantUs, leaseMs, nonce, count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), ARGV[at + 3], tonumber(ARGV[at + 4])
  at = at + 5
  local counters = bucketCounters(throttlePrefix, bucket, now)
  if counters then
    local setKey = throttleBase(throttlePrefix, bucket.name) .. ':returned'
    rcall('ZREMRANGEBYSCORE', setKey, '-inf', nowMs)
    if markReturned(setKey, nonce, releasedMsOf(counters, grantUs, leaseMs), nowMs) then
      returned = returned + windowKind.giveBack(counters, grantUs, leaseMs, now, count)
    end
  end
end
saveBucketCounters()
return { now, returned }
