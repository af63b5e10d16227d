--[[
  Leased delivery: delivers the next jobs of a throttled queue exactly as takeNextJobs-19.lua does (same
  KEYS, same ARGV up to the tokens, same reply), except that a bucket's room is the tokens this queue holds
  leased for it (includes/leasedRoom), not a window counter: the queue's throttles are counted by the
  throttle namespace's grantor (leaseTokens-1.lua), in another slot or on another Redis. Every key touched is
  in the queue's own slot.

  Before delivering, the call puts in the pools the tokens the grantor granted since the last call, each
  expiring h after the reply that preceded its request, on this node's clock: a deposit that comes after that,
  or whose request followed a reply of another node (its clock is another's), is refused whole, and one for a
  class with fewer held jobs than deliveries granted (delivered meanwhile, removed, reclassified) keeps only
  one delivery per job. A delivery is a job's cost in tokens in each bucket (one token unless the class names
  a cost there, "$<cost>"). Tokens not kept are answered for return to the grantor (none
  was ever spendable). A deposit wakes its own class: a class waits on one bucket, which others share, so a
  wake of that bucket might reach other classes first and leave this one waiting until its tokens expired.
  A class refused by the grantor, or granted fewer tokens than asked, waits (once those are spent) until the
  bucket that lacked room has it (lease-room).

  Input: KEYS and ARGV[1..14+K] as takeNextJobs-19.lua (ARGV[14+K] is 0 here: rule 1 covers late calls), then
    ARGV[15+K]  most classes waiting for tokens to answer (0: none)
    ARGV[16+K]  the node the calling worker last saw here ('' for none: includes/nodeIdentity's knownId)
    ARGV[17+K]  the node the deposits' requests followed a reply of (as this reply's lease part names it)
    ARGV[18+K]  a pool a call spends from and leaves with fewer tokens than this (or than it spent) asks
                for a refill (the worker sizes it to what it spends while a lease is in flight)
    ARGV[19+K]  D, then D deposits of 8: class, requestUs (that node's clock, the reply the request
                followed), grantUs (the grantor's clock), nonce, deliveries granted, roomInMs (when the grantor
                has room for more of the class: 0 unknown or now, -1 its throttle is no longer declared),
                the bucket id that lacked room ('' for none), '1' for a refill (tokens leased ahead for a
                flowing class: kept even beyond its held jobs)
    then        C, then C encoded names of the queue's throttles with a concurrency; U, then U pairs: bucket
                id, units of its concurrency the calling worker has free (lent to this call); E, then E bucket
                ids whose units the worker's ended jobs freed since its last call (their classes look again)
    (test builds read one more trailing ARGV, a clock offset in ms)

  A restart or promotion of this node (includes/nodeIdentity) empties every pool first: a pool restored
  from an older state may hold tokens that were spent since. The queue's record of this node (<queue base>:
  node) says whole = '1' while the queue's delivery history here goes back to its first delivery (the record
  was first made here, where no worker had seen another node): lua/readQueueHistory-1.lua vouches for all of it.

  Output: { takeNextJobs' reply, lease } with lease =
    { expired, node, W, class_1, held_1, ..., class_W, held_W, R, then R return groups of 5: bucket id,
      grantUs, leaseMs, nonce, count, S, then S jobs that spent the worker's units: job id, k, then k pairs
      bucket id, units }
  and a third element: { ticket_1, ..., ticket_n }, what job_i spent (includes/leasedRoom's roomTicketing):
  "<expiry us>!<bucket id>$<cost>@^<grantUs>:<leaseMs>:<nonce>#<units>,...|...", '' when it spent no leased token
    node: this node's identity (the next deposits name it)
    expired: tokens found expired in this call (refused deposits included); class_i: a class waiting for
    tokens, with its held jobs, or a bucket to refill ahead ("<gen>/<bucket id>", includes/leasedRoom) with -1; return groups: tokens to give back to the grantor (lua/returnLeasedTokens-1.lua): deposits not kept (nonce "<nonce>/x") and tokens that expired unspent in a pool ("<nonce>/e").
]]
local rcall = redis.call

--- @include "includes/takeJobsInput"
--- @include "includes/nodeIdentity"
--- @include "includes/leasedRoom"

local leaseArgsAt = 15 + input.K
local wantsLimit = tonumber(ARGV[leaseArgsAt])
local returns = {}

-- Locals of the deposits are scoped to this block (a script's main chunk holds at most 200).
local node
do
  local POOL_GRACE_MS = 10000
  local depositNow = nowUs()
  local nodeKey = input.queueBase .. ':node'
  local seen = checkNodeIdentity(nodeKey, math.floor(depositNow / 1000), ARGV[leaseArgsAt + 1])
  if seen == 'changed' then
    for _, bucketId in ipairs(rcall('SMEMBERS', input.queueBase .. ':lease-pools')) do rcall('DEL', poolKey(input.queueBase, bucketId)) end
    rcall('DEL', input.queueBase .. ':lease-pools')
    rcall('HDEL', nodeKey, 'whole')
  elseif seen == 'first' then
    rcall('HSET', nodeKey, 'whole', '1')
  end
  node = rcall('HGET', nodeKey, 'id')

  -- Grants since the last call go into the pools (or back) before anything is delivered.
  local sameNode = ARGV[leaseArgsAt + 2] == node
  leaseArgs.refillBelow = tonumber(ARGV[leaseArgsAt + 3])
  local depositCount = tonumber(ARGV[leaseArgsAt + 4])
  local currentGen = rcall('HGET', input.stateKey, 'gen') or ''
  leaseArgs.gen = currentGen
  -- The calling worker's concurrency (includes/leasedRoom): read before the deposits, which may wake classes.
  do
    local at = leaseArgsAt + 5 + 8 * depositCount
    for i = 1, tonumber(ARGV[at]) do leaseArgs.concurrent[ARGV[at + i]] = true end
    at = at + tonumber(ARGV[at]) + 1
    for i = 1, tonumber(ARGV[at]) do leaseArgs.free[ARGV[at + 2 * i - 1]] = tonumber(ARGV[at + 2 * i]) end
    at = at + 2 * tonumber(ARGV[at]) + 1
    -- Freed units: the classes waiting on those buckets look again now, and are asked for again if they lack
    -- room (what the grantor said of the bucket's room did not count this worker's jobs ending): as if the
    -- grantor had said now (includes/leasedRoom comingRoom.lookAgain).
    for i = 1, tonumber(ARGV[at]) do
      rcall('ZADD', input.wakeupsKey, 'XX', 'LT', intArg(depositNow), ARGV[at + i])
      rcall('HSET', input.queueBase .. ':lease-room', ARGV[at + i], intArg(depositNow))
    end
  end
  for d = 0, depositCount - 1 do
    local at = leaseArgsAt + 5 + 8 * d
    local member, requestUs, grantUs, nonce = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
    local count, roomInMs, lacking, refill = tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5]), ARGV[at + 6], ARGV[at + 7] == '1'
    local memberGen, buckets = parseClass(member)
    local expiresUs = requestUs + input.leaseMs * 1000
    local keep = 0
    if count > 0 and sameNode and expiresUs > depositNow and memberGen == currentGen then
      keep = refill and count or math.min(count, rcall('ZCARD', classJobsKey(input.queueBase, member)))
    end
    if count > 0 and (expiresUs <= depositNow or not sameNode) then
      for _, bucket in ipairs(buckets) do noteExpired(bucket.name, count * bucket.cost) end
    end
    for _, bucket in ipairs(buckets) do
      local pool = poolKey(input.queueBase, bucket.id)
      if keep > 0 and bucket.cost > 0 then
        -- One entry holds the grant's tokens for the bucket, its deliveries' cost there (includes/leasedRoom).
        rcall('ZADD', pool, intArg(expiresUs), grantUs .. ':' .. input.leaseMs .. ':' .. nonce .. '#' .. keep * bucket.cost)
        rcall('SADD', input.queueBase .. ':lease-pools', bucket.id)
        -- The pool outlives its last token a while, so that a sweep finds (and counts) tokens that expired unspent.
        local ttl = math.ceil((expiresUs - depositNow) / 1000) + POOL_GRACE_MS
        if rcall('PTTL', pool) < ttl then rcall('PEXPIRE', pool, ttl) end
        rcall('HDEL', input.queueBase .. ':lease-dry', bucket.id)
        -- Classes waiting on the bucket are looked at in this call (the wake below), not when it was due.
        rcall('ZADD', input.wakeupsKey, 'XX', 'LT', intArg(depositNow), bucket.id)
      end
      -- Granted in part or not at all: once these tokens are spent, the bucket has room when the grantor said
      -- (the worker does not ask for the class before then either).
      if roomInMs > 0 and (lacking == '' or lacking == bucket.id) then
        rcall('HSET', input.queueBase .. ':lease-room', bucket.id, intArg(depositNow + roomInMs * 1000))
      elseif keep > 0 then
        rcall('HDEL', input.queueBase .. ':lease-room', bucket.id)
      end
      if count > keep and bucket.cost > 0 then
        returns[#returns + 1] = bucket.id
        returns[#returns + 1] = grantUs
        returns[#returns + 1] = input.leaseMs
        returns[#returns + 1] = nonce .. '/x'
        returns[#returns + 1] = (count - keep) * bucket.cost
      end
    end
    -- A class the grantor had no room for leaves too: it waits for lease-room (its wakeup), and asks again
    -- (noteBlocked) when it finds no token then; meanwhile it is not among the classes asked for soon.
    if keep > 0 or roomInMs ~= 0 then rcall('ZREM', input.queueBase .. ':lease-wants', member) end
    -- Tokens came, or the grantor said which bucket lacks room until when: a class waiting on another bucket
    -- (one with no word from the grantor: it looks again every 50 ms) looks again now, and then waits on that.
    local waitedOn = (keep > 0 or roomInMs > 0) and rcall('HGET', input.classStateKey, member)
    if waitedOn and keep == 0 and waitedOn == lacking then waitedOn = nil end
    if waitedOn then
      -- As the wake of a bucket's waiters does (includes/wakeDueBuckets), for this class alone.
      local waiters = waitersKey(input.queueBase, waitedOn)
      local order = rcall('ZSCORE', waiters, member)
      rcall('ZREM', waiters, member)
      rcall('HDEL', input.classStateKey, member)
      local held = rcall('ZCARD', classJobsKey(input.queueBase, member))
      statsNotes.waiting(input.queueBase, parseBucketId(waitedOn), -held)
      if held > 0 then rcall('HINCRBY', input.stateKey, 'blocked', -held) end
      if order then rcall('ZADD', input.readyClassesKey, order, member) end
      if rcall('EXISTS', waiters) == 0 then rcall('ZREM', input.wakeupsKey, waitedOn) end
    end
  end
end

--- @include "includes/takeJobsBody"

local run = takeJobs(input)

-- Classes waiting for tokens, first in queue order, with their held jobs (the worker leases for them).
local lease = { expiredThisRun(), node, 0 }
if wantsLimit > 0 then
  local wants = rcall('ZRANGE', input.queueBase .. ':lease-wants', 0, wantsLimit - 1, 'WITHSCORES')
  for i = 1, #wants, 2 do
    local member, refill = wants[i], wants[i + 1] == '0'
    local held = rcall('ZCARD', classJobsKey(input.queueBase, member))
    if parseClass(member) ~= run.gen or (held == 0 and not refill) then
      rcall('ZREM', input.queueBase .. ':lease-wants', member)
    else
      -- A refill is leased for the slots asking and ahead, beyond the jobs its class holds now.
      if refill then held = -1 end
      lease[#lease + 1] = member
      lease[#lease + 1] = held
      lease[3] = lease[3] + 1
    end
  end
end
for _, field in ipairs(leaseArgs.expiredReturns) do returns[#returns + 1] = field end
lease[#lease + 1] = #returns / 5
for _, field in ipairs(returns) do lease[#lease + 1] = field end
local spends = leaseArgs.spends
lease[#lease + 1] = #spends / 2
for i = 1, #spends, 2 do
  lease[#lease + 1] = spends[i]
  lease[#lease + 1] = #spends[i + 1] / 2
  for _, field in ipairs(spends[i + 1]) do lease[#lease + 1] = field end
end
-- What each delivered job spent (includes/leasedRoom's roomTicketing), in the order of the reply's jobs.
return { run.reply, lease, roomTicketing.tickets }
