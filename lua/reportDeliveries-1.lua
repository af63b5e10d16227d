--[[
  An exact worker (or a Grantor of the API, of its grants) tells the namespace, while it gathers after a restart
  or failover lost what its node counted (includes/grantorRecovery, includes/recoveryHold's workers' gather),
  what it delivered lately, from its own memory (src/worker/recovery/deliveryMemory.ts, src/grant/
  grantMemory.ts), counted again (includes/countAgain). A delivery the node kept is
  counted twice: the safe direction. The worker counts as reported (a second report of the same gather counts nothing), and
  the workers it saw alive within their throttles' longest window are expected too: when every expected worker
  has told, the gather ends, and the throttles go on after the hold's lease.

  A worker that cannot tell (no start deadline, a memory past its bound) says so with ARGV[4] '0': it is
  expected and never reported, so the throttles it declares hold for their longest window when the gather ends.

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] the worker's id   ARGV[3] the gather's epoch
    ARGV[4]  '1' when the worker tells what it delivered, '0' when it cannot
    ARGV[5]  the longest lease (ms) those deliveries were counted with: they count again at least that long, the
             record's hmax or this, whichever is longer (the record may have lost a longer hmax with the counts)
    ARGV[6]  "<encoded throttle>:<longest ms>,..." the worker declares
    ARGV[7]  P, then P pairs: a worker it saw alive (its id) or a leased queue (prefix:queue), and the same list
             for it
    then     B, then per bucket: bucket id, S, then S pairs (agoUs, count)
    then     C, then per window counter: bucket id, N, W (ms), S, then S pairs (agoUs, count): what a Grantor of the
             API granted (src/grant/grantMemory.ts), whose throttles may have no published limits; 0 for a worker
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowUs, deliveries counted again, state } state: 0 no such gather (over, or another epoch),
    1 reported, 2 reported and the gather ended
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/countAgain"
--- @include "includes/nodeIdentity"
--- @include "includes/grantorRecovery"

local throttlePrefix, workerId, epoch = ARGV[1], ARGV[2], ARGV[3]
local now = nowUs()
local recordKey = throttlePrefix .. ':grantor'
local fields = rcall('HMGET', recordKey, 'hold', 'gathering', 'hmax')
if fields[1] ~= 'gather' or fields[2] ~= epoch then return { now, 0, 0 } end
local hmaxUs = math.max(tonumber(fields[3]) or 0, tonumber(ARGV[5]) or 0) * 1000
local expectedKey, reportedKey = recordKey .. ':expected', recordKey .. ':reported'
rcall('HSETNX', expectedKey, workerId, ARGV[6])
local at = 8
for _ = 1, tonumber(ARGV[7]) do
  rcall('HSETNX', expectedKey, ARGV[at], ARGV[at + 1])
  at = at + 2
end
local counted = 0
if ARGV[4] == '1' and rcall('SADD', reportedKey, workerId) == 1 then
  local countersAt
  counted, countersAt = countAgain(throttlePrefix, at, now, hmaxUs)
  saveBucketCounters()
  counted = counted + countCountersAgain(throttlePrefix, countersAt, now, hmaxUs)
  bucketIndexes.flush()
end
-- Ended already (bucketCounters looked at a gather past its time), or every one expected has told now.
if rcall('HGET', recordKey, 'gathering') ~= epoch then return { now, counted, 2 } end
if not grantorGather.complete(throttlePrefix, math.floor(now / 1000)) then return { now, counted, 1 } end
rcall('HSET', recordKey, 'gathering', '')
return { now, counted, 2 }
