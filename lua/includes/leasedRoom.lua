--[[
  The room source of leased delivery (see includes/takeJobsBody), for a queue whose throttles are counted
  elsewhere (another slot, another node, another Redis: the namespace's grantor, lua/leaseTokens-1.lua).
  A bucket has room when this queue holds an unexpired token leased for it; a delivery spends one.

  Tokens (this queue's slot):
    <queueBase>:lp:<bucket id>   ZSET token -> expiry (us, this node's clock): the bucket's pool; a token is
                                 "<grantUs>:<leaseMs>:<nonce>:<k>" (what returning it needs)
    <queueBase>:lease-wants      ZSET class -> order: classes waiting for tokens (the worker leases for them)
    <queueBase>:lease-room       HASH bucket id -> us (this node's clock) the grantor said it has room again
    <queueBase>:lease-pools      SET of bucket ids that may have a pool (withdrawLeases finds them there)
    <queueBase>:lease-classes    HASH bucket id -> the class its last deposit was for

  A pool that a call spends down to fewer tokens than it spent names its last class in lease-wants with
  order 0 (a refill, answered with held -1): the worker leases ahead for a class that is flowing, so that
  its next jobs find tokens and go straight to active rather than wait in the class's list.

  Rule 1 of leases holds here: a token expires h (the lease) after the delivery script reply that preceded
  the worker's request for it, read on this node's clock (depositTokens stores that expiry), and a token past
  it is never spent: every pool is swept of expired tokens before it is read, and the sweep is counted as
  tokens expired. The grantor counted each token against W + h when it granted it, after the request left,
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

-- A class waiting for tokens with no word from the grantor looks again after this long (the worker's lease
-- request normally answers first, and its deposit wakes the class).
local LEASE_LOOK_AGAIN_US = 50000

local leasedContext
local pools = {}
local expiredByThrottle = {}
local histories = {}
local longestByThrottle = {}
-- History counters never refuse: the grantor decides; they only remember.
local HISTORY_MAX = 1e15

local function longestOf(name)
  local longest = longestByThrottle[name]
  if longest == nil then
    longest = tonumber(rcall('HGET', queueStatsBase(leasedContext.queueBase, name) .. ':stats', 'longest')) or 60000
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

local function roomSource(bucket)
  local pool = pools[bucket.id]
  if pool then return pool end
  local key = poolKey(leasedContext.queueBase, bucket.id)
  noteExpired(bucket.name, rcall('ZREMRANGEBYSCORE', key, '-inf', intArg(leasedContext.now)))
  pool = { key = key, bucket = bucket, count = rcall('ZCARD', key) }
  pools[bucket.id] = pool
  return pool
end

local function roomLeft(pool)
  return pool.count
end

local function roomReturnsAtUs(pool)
  if pool.count > 0 then return 0 end
  local said = tonumber(rcall('HGET', leasedContext.queueBase .. ':lease-room', pool.bucket.id))
  if said and said > leasedContext.now then return said end
  return leasedContext.now + LEASE_LOOK_AGAIN_US
end

local function spendRoom(pool)
  rcall('ZPOPMIN', pool.key)
  pool.count = pool.count - 1
  pool.spent = (pool.spent or 0) + 1
  local history = histories[pool.bucket.id]
  if history == nil then
    local longest = longestOf(pool.bucket.name)
    history = loadCounter(leasedContext.queueBase .. ':h:' .. longest .. '/' .. pool.bucket.id, HISTORY_MAX, longest, leasedContext.now)
    histories[pool.bucket.id] = history
  end
  addToken(history, 0)
end

local function noteBlocked(member, order, bucket, atUs)
  rcall('ZADD', leasedContext.queueBase .. ':lease-wants', 'NX', intArg(order), member)
end

local function saveRoom()
  for bucketId, pool in pairs(pools) do
    if pool.spent and pool.count < pool.spent then
      local member = rcall('HGET', leasedContext.queueBase .. ':lease-classes', bucketId)
      if member then rcall('ZADD', leasedContext.queueBase .. ':lease-wants', 'NX', 0, member) end
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
