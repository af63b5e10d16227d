--[[
  The room source of leased delivery (see includes/takeJobsBody), for a queue whose throttles are counted
  elsewhere (another slot, another node, another Redis: the namespace's grantor, lua/leaseTokens-1.lua).
  A bucket has room when this queue holds an unexpired token leased for it; a delivery spends one, or its
  cost there (a throttle's cost(): a token is one unit, and the grantor grants a class's deliveries with
  their cost in every bucket, lua/leaseTokens-1.lua). A bucket whose throttle has a concurrency also needs
  that many of the calling worker's units: the worker holds them from the grantor and counts its jobs in
  them itself (src/delivery/leased/concurrencyHolds.ts); the call is lent the free ones, spends them with
  the job's cost, and names what each job spent in its reply.

  Tokens (this queue's slot):
    <queueBase>:lp:<bucket id>   ZSET entry -> expiry (us, this node's clock): the bucket's pool, one entry per
                                 deposit, "<grantUs>:<leaseMs>:<nonce>#<units>": the tokens of one grant
                                 still here (what returning them needs). A job costing 5000 spends 5000
                                 tokens, so tokens are kept together, never one member each: the pool
                                 holds as many entries as deposits within h, whatever the costs.
    <queueBase>:lease-wants      ZSET class -> order: classes waiting for tokens (the worker leases for them)
    <queueBase>:lease-room       HASH bucket id -> us (this node's clock) the grantor said it has room again
    <queueBase>:lease-pools      SET of bucket ids that may have a pool (withdrawLeases finds them there)
    <queueBase>:lpaused:<bucket id>  a pause a RetryAfterError of this queue set, expiring with it (its pool is not spent)
    <queueBase>:lease-dry        HASH bucket id -> us (this node's clock) tokens were asked for the bucket
                                 (a refill, a class waiting) and have not come yet; -us: when such an ask
                                 went overdue (no tokens within h)

  A bucket is refilled ahead while it flows: a call that spent its pool's tokens on FLOWING_SPENT or more
  fresh jobs (or spent one and then lacked another for a fresh job that lacked nothing else) and left fewer
  than it spent, or than leaseArgs.refillBelow (the worker's mark), names the bucket alone in
  lease-wants, as the class "<gen>/<bucket id>" with order 0 (a refill, answered with held -1; with
  "$<cost>" when the jobs it served cost more than 1 there on average: a refill is leased in deliveries of
  that cost, as a class's tokens are), and the
  worker leases tokens for it before its next jobs arrive, so that they go straight to active. A refill is
  per bucket, not per class: a keyed class's other buckets (one customer's) are not leased ahead with it.

  While tokens are on their way (lease-dry: a refill; or tokens for a waiting class, while the class is
  among the first SOON_RANK in lease-wants, which the worker's next round serves), for at most h, a fresh job that lacks only that bucket's token stays first in wait
  and the call takes no more fresh jobs (comingRoom.soon): filed into its class, it and every fresh job behind
  it would cost several commands more each, to be delivered from the class moments later. With many
  classes waiting (a keyed throttle), the later ones' fresh jobs are filed as in exact delivery. Past h (the
  grantor slow or away), and for OVERDUE_HOLD_H times h after that, or once the grantor has said it has no
  room, fresh jobs are filed as in exact delivery, so that the jobs behind, of other buckets, keep flowing.

  Rule 1 of leases holds here: a token expires h (the lease) after the delivery script reply that preceded
  the worker's request for it, read on this node's clock (depositTokens stores that expiry), and a token past
  it is never spent: every pool is swept of expired tokens before it is read, and the sweep is counted as
  tokens expired, and returned to the grantor (never spent, they need not count there: a limit of 3 per hour
  loses nothing to a worker too busy to spend its tokens in time). The grantor counted each token against W + h when it granted it, after the request left,
  so a token spent here was spent within h of its grant: at most N in any window of W (rule 2).
  A pool's key expires a while after its last token (so that a sweep still counts those that expired).

  Every spend is recorded in the queue's own slot, per bucket, for its throttle's longest window, so that
  a grantor that lost its counts (a restart, a failover) can count them again (reportQueueHistory):
    <queueBase>:h:<W>/<bucket id>  HASH a window counter (includes/windowCounter, window W: the throttle's
                                 longest, no lease) of the spends
    <queueBase>:h-index          ZSET "<W>/<bucket id>" -> ms that history empties
    <queueBase>:node             HASH id, since: this node's identity (includes/nodeIdentity); the history
                                 is whole only since then

  Needs includes/schedulerKeys, includes/intArg and includes/throttleStatsNotes.
]]
--- @include "windowCounter"
--- @include "queueHistory"


local leasedContext
-- Set by the including script: the refill mark (its ARGV) and the queue's config generation.
-- concurrent: encoded names of the throttles with a concurrency; free: bucket id -> units of it the calling
-- worker holds and has free (lent to this call); spends: { job id, { bucket id, units, ... } } spent here.
-- expiredReturns: tokens that expired unspent in a pool, as return groups of 5 (bucket id, grantUs, leaseMs,
-- "<nonce>/e", units): never spent, and out of the pool, they go back to the grantor.
local leaseArgs = { refillBelow = 0, gen = '', concurrent = {}, free = {}, spends = {}, expiredReturns = {} }
local LEASED_ROOM = {
  -- A class waiting for tokens with no word from the grantor looks again after this long (the worker's
  -- lease request normally answers first, and its deposit wakes the class).
  LOOK_AGAIN_US = 50000,
  -- A pool that a call spent at least this many tokens from for fresh jobs (straight from wait), or spent
  -- from and then lacked for a fresh job that had room in its other buckets, flows: it is refilled ahead.
  -- (A keyed class's shared bucket spent for held jobs is not refilled: those jobs lack their key's tokens.)
  FLOWING_SPENT = 2,
  -- lease-dry outlives its last mark this long.
  DRY_MARK_MS = 10000,
  -- An ask that went overdue (no tokens within h) keeps its bucket from counting as coming for this many h.
  OVERDUE_HOLD_H = 10,
  -- A waiting class this far up lease-wants has its tokens in the worker's next lease round.
  SOON_RANK = 4,
}
local pools = {}
local expiredByThrottle = {}
local histories = {}
local longestByThrottle = {}

local function longestOf(name)
  local longest = longestByThrottle[name]
  if longest == nil then
    longest = tonumber(rcall('HGET', queueStatsBase(leasedContext.queueBase, name) .. ':stats', 'longest')) or queueHistory.FALLBACK_WINDOW_MS
    longestByThrottle[name] = longest
  end
  return longest
end

local function poolKey(queueBase, bucketId)
  return queueBase .. ':lp:' .. bucketId
end

local function initRoom(ctx)
  leasedContext = ctx
end

local function noteExpired(name, count)
  if count > 0 then expiredByThrottle[name] = (expiredByThrottle[name] or 0) + count end
end

-- Tokens an entry holds ("...#<units>"; an entry without, written by an older version, holds one).
local function unitsOf(entry)
  return tonumber(string.match(entry, '#(%d+)$')) or 1
end

-- A pool is read once a call, swept first, its entries in order of expiry: the earliest spent first.
local function roomSource(bucket)
  local pool = pools[bucket.id]
  if pool then return pool end
  local key = poolKey(leasedContext.queueBase, bucket.id)
  local nowArg = intArg(leasedContext.now)
  local expired = rcall('ZRANGEBYSCORE', key, '-inf', nowArg)
  if #expired > 0 then
    local units = 0
    local returns = leaseArgs.expiredReturns
    for _, entry in ipairs(expired) do
      units = units + unitsOf(entry)
      local grantUs, leaseMs, nonce, left = string.match(entry, '^(%d+):(%d+):([^#]+)#(%d+)$')
      if grantUs then
        returns[#returns + 1] = bucket.id
        returns[#returns + 1] = grantUs
        returns[#returns + 1] = leaseMs
        returns[#returns + 1] = nonce .. '/e'
        returns[#returns + 1] = left
      end
    end
    noteExpired(bucket.name, units)
    rcall('ZREMRANGEBYSCORE', key, '-inf', nowArg)
  end
  local entries = rcall('ZRANGE', key, 0, -1, 'WITHSCORES')
  local count = 0
  for i = 1, #entries, 2 do count = count + unitsOf(entries[i]) end
  -- A bucket a processor of this queue paused (RetryAfterError) spends none of its pool while the pause lasts:
  -- the namespace's pause is in another slot, and this marker, set by that worker with the pause's time as its
  -- expiry (on this node's clock), is its copy here. Its tokens expire unspent, returned as any expired.
  if #entries > 0 and rcall('EXISTS', leasedContext.queueBase .. ':lpaused:' .. bucket.id) == 1 then count = 0 end
  -- next: the entry spent from; taken: tokens taken from it so far (written back by saveRoom).
  pool = { key = key, bucket = bucket, count = count, entries = entries, next = 1, taken = 0 }
  -- A bucket with a concurrency needs the calling worker's units too (nil: it has none to need).
  if leaseArgs.concurrent[bucket.name] then pool.units = leaseArgs.free[bucket.id] or 0 end
  pools[bucket.id] = pool
  return pool
end

-- Takes `cost` tokens (the caller checked there are as many), earliest expiry first. Returns what it took, per
-- entry, "<grantUs>:<leaseMs>:<nonce>#<units>" (what giving them back to the grantor needs; an entry of an older
-- version's format names no grant and is left out).
local function takeTokens(pool, cost)
  local left = cost
  local took = {}
  while left > 0 do
    local entry = pool.entries[pool.next]
    local units = unitsOf(entry) - pool.taken
    local taken = math.min(units, left)
    local grant = string.match(entry, '^(%d+:%d+:[^#]+)#%d+$')
    if grant then took[#took + 1] = grant .. '#' .. taken end
    if units > left then
      pool.taken = pool.taken + left
      left = 0
    else
      left = left - units
      pool.next = pool.next + 2
      pool.taken = 0
    end
  end
  return took
end

-- Writes back what the call took: entries used up go, one used in part keeps what is left.
local function savePool(pool)
  local entries = pool.entries
  local gone = {}
  for i = 1, pool.next - 1, 2 do gone[#gone + 1] = entries[i] end
  local partial = pool.taken > 0 and entries[pool.next]
  if partial then gone[#gone + 1] = partial end
  if #gone > 0 then rcall('ZREM', pool.key, unpack(gone)) end
  if partial then
    local base = string.match(partial, '^(.*)#%d+$') or partial
    rcall('ZADD', pool.key, entries[pool.next + 1], base .. '#' .. (unitsOf(partial) - pool.taken))
  end
end

local function roomLeft(pool)
  if pool.units and pool.units < pool.count then return pool.units end
  return pool.count
end

-- When the grantor said the pool's bucket has room again (lease-room; false: it said nothing), read once a
-- call: deposits, the only writers, ran before the delivery body.
local function roomSaidAtUs(pool)
  if pool.saidUs == nil then
    pool.saidUs = tonumber(rcall('HGET', leasedContext.queueBase .. ':lease-room', pool.bucket.id)) or false
  end
  return pool.saidUs or nil
end

local function roomReturnsAtUs(pool, cost)
  cost = cost or 1
  if pool.count >= cost and (pool.units == nil or pool.units >= cost) then return 0 end
  -- Tokens, but too few of the worker's units: asked for (noteBlocked), they come with the class's next lease.
  if pool.count >= cost then return leasedContext.now + LEASED_ROOM.LOOK_AGAIN_US end
  local said = roomSaidAtUs(pool)
  if said and said > leasedContext.now then return said end
  return leasedContext.now + LEASED_ROOM.LOOK_AGAIN_US
end

-- The grantor holds the limits: a pool cannot say when a backlog would go (nil: no estimate, includes/deadlines).
local function roomWaitAtUs(pool, units)
  return nil
end

-- What each job delivered this run spent, so that a job whose processor would start after its tokens expire can
-- be put back (src/worker/lateStarts/startDeadlines.ts): "<expiry us>!" (the earliest expiry of the tokens it spent: every
-- grant counted them against W + h up to then), then per bucket "<bucket id>$<cost>@^<grant>#<units>,..." joined
-- by '|' (the buckets whose statistics noted it, which lua/lateStartPutBack-n takes back, and the grants its
-- tokens came from, which go back to the grantor: the job never started, so they need not count); '' when it
-- spent no leased token.
local roomTicketing = { tickets = {}, parts = {}, expiry = {} }

-- A lease's room comes when the grantor's lease round answers (comingRoom), for every waiter at once.
local function roomWakeAtUs(bucketId, atUs)
  return atUs
end

-- A job whose cost cannot be counted ($0: it fails before its processor runs) spends nothing.
local function spendRoom(pool, fresh, jobId, cost)
  cost = cost or 1
  if cost <= 0 then return end
  -- Entries are in order of expiry, spent from pool.next: the first one this job takes from expires first.
  local expiry = tonumber(pool.entries[pool.next + 1])
  local earliest = roomTicketing.expiry[jobId]
  if expiry and (earliest == nil or expiry < earliest) then roomTicketing.expiry[jobId] = expiry end
  local parts = roomTicketing.parts[jobId]
  if not parts then
    parts = {}
    roomTicketing.parts[jobId] = parts
  end
  parts[#parts + 1] = pool.bucket.id .. '$' .. cost .. '@^' .. table.concat(takeTokens(pool, cost), ',')
  if pool.units then
    pool.units = pool.units - cost
    local spends = leaseArgs.spends
    if spends[#spends - 1] ~= jobId then
      spends[#spends + 1] = jobId
      spends[#spends + 1] = {}
    end
    local units = spends[#spends]
    units[#units + 1] = pool.bucket.id
    units[#units + 1] = cost
  end
  pool.count = pool.count - cost
  pool.spent = (pool.spent or 0) + cost
  pool.spentBy = (pool.spentBy or 0) + 1
  if fresh then pool.freshSpent = (pool.freshSpent or 0) + 1 end
  local history = histories[pool.bucket.id]
  if history == nil then
    local longest = longestOf(pool.bucket.name)
    history = loadCounter(queueHistory.key(leasedContext.queueBase, longest, pool.bucket.id), queueHistory.MAX, longest, leasedContext.now)
    histories[pool.bucket.id] = history
  end
  addTokens(history, cost, 0)
end

-- Room on its way (see the header): the comingRoom part of this room source (includes/takeJobsBody).
local comingRoom = {}

-- Names the pool's bucket for a refill (order 0 in lease-wants, even if its member waits already: a
-- one-bucket class is its bucket's member too), coming until a deposit for it and at most h (soon).
-- What the jobs this call spent the pool's tokens for cost there, on average (rounded up; 1 when none did).
local function meanCostOf(pool)
  return math.max(1, math.ceil((pool.spent or 0) / math.max(1, pool.spentBy or 0)))
end

function comingRoom.askRefill(pool)
  if pool.refillAsked then return end
  pool.refillAsked = true
  local member = leaseArgs.gen .. '/' .. pool.bucket.id
  local meanCost = meanCostOf(pool)
  if meanCost > 1 then member = member .. '$' .. meanCost end
  rcall('ZADD', leasedContext.queueBase .. ':lease-wants', 0, member)
  comingRoom.markAsked(pool.bucket.id)
end

-- Tokens were asked for the bucket now, unless an earlier ask is still pending, or went overdue less than
-- OVERDUE_HOLD_H times h ago (a grantor slow or away is not waited on again at once).
function comingRoom.markAsked(bucketId)
  local dryKey = leasedContext.queueBase .. ':lease-dry'
  local since = tonumber(rcall('HGET', dryKey, bucketId))
  if since ~= nil and (since >= 0 or -since + LEASED_ROOM.OVERDUE_HOLD_H * leasedContext.leaseMs * 1000 > leasedContext.now) then return end
  rcall('HSET', dryKey, bucketId, intArg(leasedContext.now))
  rcall('PEXPIRE', dryKey, LEASED_ROOM.DRY_MARK_MS)
end

-- A fresh job lacked room in this bucket only: a pool this call spent from is refilled now, so that the
-- fresh jobs behind wait for it in bullmq's list rather than be filed.
function comingRoom.lackedAlone(pool)
  pool.lackedAlone = true
  if (pool.spent or 0) > 0 then comingRoom.askRefill(pool) end
end

-- Too few tokens now for `cost`, but a refill asked for less than h ago and the grantor never said it has no room.
function comingRoom.soon(pool, cost)
  if pool.count >= (cost or 1) then return false end
  -- The worker's units are not on their way: the job is filed, and its class leased for.
  if pool.units and pool.units < (cost or 1) then return false end
  local dryKey = leasedContext.queueBase .. ':lease-dry'
  local since = tonumber(rcall('HGET', dryKey, pool.bucket.id))
  if since == nil or since < 0 then return false end
  if since + leasedContext.leaseMs * 1000 <= leasedContext.now then
    -- Overdue (the grantor is slow or away): fresh jobs are filed again until tokens come, so that the
    -- jobs behind, of other buckets, keep flowing.
    rcall('HSET', dryKey, pool.bucket.id, intArg(-leasedContext.now))
    return false
  end
  local said = roomSaidAtUs(pool)
  return not (said and said > leasedContext.now)
end

-- The time the grantor said the bucket has room again has come: its waiters (left out of lease-wants until
-- then, see noteBlocked) look again and are named there, rather than wait for room nobody asks for. Waiters
-- with no word from the grantor are in lease-wants already, and wait for the worker's lease rounds.
function comingRoom.lookAgain(pool)
  if pool.count > 0 then return false end
  local said = roomSaidAtUs(pool)
  return said ~= nil and said <= leasedContext.now
end

-- A waiting class's tokens are soon there if the worker's next lease round asks for it: it is among the
-- first classes waiting (the worker leases for the first ones, in queue order, a round at a time).
function comingRoom.askedSoon(member)
  local rank = rcall('ZRANK', leasedContext.queueBase .. ':lease-wants', member)
  return rank ~= false and rank < LEASED_ROOM.SOON_RANK
end

-- A leased worker counts its jobs' concurrency itself (src/delivery/leased/concurrencyHolds.ts).
local function freshJobTaken(jobId) end

-- The job delivered next in the reply (after spendRoom for each of its buckets): its ticket (see roomTicketing).
function roomTicketing.delivered(jobId)
  local expiry = roomTicketing.expiry[jobId]
  roomTicketing.tickets[#roomTicketing.tickets + 1] = expiry and (intArg(expiry) .. '!' .. table.concat(roomTicketing.parts[jobId], '|')) or ''
end

local function noteBlocked(member, order, bucket, atUs)
  -- The grantor said when it has room (lease-room): the class is asked for when it wakes then.
  if atUs > leasedContext.now + LEASED_ROOM.LOOK_AGAIN_US then return end
  rcall('ZADD', leasedContext.queueBase .. ':lease-wants', 'NX', intArg(order), member)
  -- Asked for now: coming, for the class's fresh jobs behind, while among the first asked (askedSoon).
  comingRoom.markAsked(bucket.id)
end

local function saveRoom()
  for bucketId, pool in pairs(pools) do
    savePool(pool)
    local spent = pool.spent or 0
    if spent > 0 and ((pool.freshSpent or 0) >= LEASED_ROOM.FLOWING_SPENT or pool.lackedAlone) and pool.count < math.max(spent, leaseArgs.refillBelow * meanCostOf(pool)) then
      comingRoom.askRefill(pool)
    end
  end
  local index = {}
  for bucketId, history in pairs(histories) do
    saveCounter(history)
    index[#index + 1] = intArg(leasedContext.nowMs + history.g.windowMs)
    index[#index + 1] = history.g.windowMs .. '/' .. bucketId
  end
  if #index > 0 then
    local indexKey = leasedContext.queueBase .. ':h-index'
    rcall('ZADD', indexKey, 'GT', unpack(index))
    rcall('ZREMRANGEBYSCORE', indexKey, '-inf', intArg(leasedContext.nowMs))
  end
  for name, count in pairs(expiredByThrottle) do
    rcall('HINCRBY', queueStatsBase(leasedContext.queueBase, name) .. ':stats', 'expired', count)
  end
  saveDeliveryNotes(leasedContext.queueBase, leasedContext.nowMs, nil)
end

-- Tokens expired in this run, over every throttle.
local function expiredThisRun()
  local total = 0
  for _, count in pairs(expiredByThrottle) do total = total + count end
  return total
end
