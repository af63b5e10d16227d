--[[
  Leased delivery: delivers the next jobs of a throttled queue exactly as takeNextJobs-19.lua does (same
  KEYS, same ARGV up to the tokens, same reply), except that a bucket's room is the tokens this queue holds
  leased for it (includes/leasedRoom), not a window counter: the queue's throttles are counted by the
  throttle namespace's grantor (leaseTokens-1.lua), in another slot or on another Redis. Every key touched is
  in the queue's own slot.

  Before delivering, the call puts in the pools the tokens the grantor granted since the last call, each
  expiring h after the reply that preceded its request, on this node's clock: a deposit that comes after that
  is refused whole, and one for a class with fewer held jobs than tokens (delivered meanwhile, removed,
  reclassified) keeps only one token per job. Tokens not kept are answered for return to the grantor (none
  was ever spendable). A deposit wakes the classes waiting on its buckets.

  Input: KEYS and ARGV[1..12+K] as takeNextJobs-19.lua, then
    ARGV[13+K]  most classes waiting for tokens to answer (0: none)
    ARGV[14+K]  D, then D deposits of 6: class, requestUs (this node's clock, the reply the request
                followed), grantUs (the grantor's clock), nonce, granted count, roomInMs (when the grantor
                has room for more of the class: 0 unknown or now, -1 its throttle is no longer declared)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { takeNextJobs' reply, lease } with lease =
    { expired, W, class_1, held_1, ..., class_W, held_W, R, then R return groups of 5: bucket id, grantUs,
      leaseMs, nonce, count }
    expired: tokens found expired in this call (refused deposits included); class_i: a class waiting for
    tokens, with its held jobs; return groups: tokens to give back to the grantor (lua/returnLeasedTokens-1.lua).
]]
local rcall = redis.call

--- @include "includes/takeJobsInput"
--- @include "includes/leasedRoom"

local leaseArgsAt = 13 + K
local wantsLimit = tonumber(ARGV[leaseArgsAt])
local returns = {}

-- Grants since the last call go into the pools (or back) before anything is delivered.
local depositNow = nowUs()
local depositCount = tonumber(ARGV[leaseArgsAt + 1])
local currentGen = rcall('HGET', stateKey, 'gen') or ''
for d = 0, depositCount - 1 do
  local at = leaseArgsAt + 2 + 6 * d
  local member, requestUs, grantUs, nonce = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
  local count, roomInMs = tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5])
  local memberGen, buckets = parseClass(member)
  local expiresUs = requestUs + leaseMs * 1000
  local keep = 0
  if count > 0 and expiresUs > depositNow and memberGen == currentGen then
    keep = math.min(count, rcall('ZCARD', classJobsKey(queueBase, member)))
  end
  if count > 0 and expiresUs <= depositNow then
    for _, bucket in ipairs(buckets) do noteExpired(bucket.name, count) end
  end
  for _, bucket in ipairs(buckets) do
    local pool = poolKey(queueBase, bucket.id)
    if keep > 0 then
      local tokens = {}
      for k = 1, keep do
        tokens[#tokens + 1] = intArg(expiresUs)
        tokens[#tokens + 1] = grantUs .. ':' .. leaseMs .. ':' .. nonce .. ':' .. k
      end
      rcall('ZADD', pool, unpack(tokens))
      rcall('SADD', queueBase .. ':lease-pools', bucket.id)
      local ttl = math.ceil((expiresUs - depositNow) / 1000)
      if rcall('PTTL', pool) < ttl then rcall('PEXPIRE', pool, ttl) end
      rcall('HDEL', queueBase .. ':lease-room', bucket.id)
      rcall('ZADD', wakeupsKey, intArg(depositNow), bucket.id)
    elseif roomInMs > 0 then
      rcall('HSET', queueBase .. ':lease-room', bucket.id, intArg(depositNow + roomInMs * 1000))
    end
    if count > keep then
      returns[#returns + 1] = bucket.id
      returns[#returns + 1] = grantUs
      returns[#returns + 1] = leaseMs
      returns[#returns + 1] = nonce .. '/x'
      returns[#returns + 1] = count - keep
    end
  end
  if keep > 0 or roomInMs < 0 then rcall('ZREM', queueBase .. ':lease-wants', member) end
end

--- @include "includes/takeJobsBody"

-- Classes waiting for tokens, first in queue order, with their held jobs (the worker leases for them).
local lease = { expiredThisRun(), 0 }
if wantsLimit > 0 then
  local wants = rcall('ZRANGE', queueBase .. ':lease-wants', 0, wantsLimit - 1)
  for _, member in ipairs(wants) do
    local held = rcall('ZCARD', classJobsKey(queueBase, member))
    if held == 0 or parseClass(member) ~= gen then
      rcall('ZREM', queueBase .. ':lease-wants', member)
    else
      lease[#lease + 1] = member
      lease[#lease + 1] = held
      lease[2] = lease[2] + 1
    end
  end
end
lease[#lease + 1] = #returns / 5
for _, field in ipairs(returns) do lease[#lease + 1] = field end
return { reply, lease }
