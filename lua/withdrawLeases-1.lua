--[[
  Takes every leased token out of a queue's pools when its last live ThrottledWorker closes, so that they
  can be returned to the grantor (returnLeasedTokens-1.lua) and stop counting: taken out first, a token can
  never be both spent and returned. While another worker of the queue lives, the tokens stay for it.

  Input:
    KEYS[1]  the queue's workers (ZSET worker id -> lapse ms)
    ARGV[1]  queue base of our keys   ARGV[2] the closing worker's id
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { G, then G groups of 5: bucket id, grantUs, leaseMs, nonce, count }, or { 0 } while another
  worker lives
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"

local workersKey, queueBase, me = KEYS[1], ARGV[1], ARGV[2]
local nowMs = math.floor(nowUs() / 1000)
for _, worker in ipairs(rcall('ZRANGEBYSCORE', workersKey, '(' .. intArg(nowMs), '+inf')) do
  if worker ~= me then return { 0 } end
end
local poolsKey = queueBase .. ':lease-pools'
local reply = { 0 }
for _, bucketId in ipairs(rcall('SMEMBERS', poolsKey)) do
  local pool = queueBase .. ':lp:' .. bucketId
  -- Entries are "<grantUs>:<leaseMs>:<nonce>#<units>" (includes/leasedRoom), each returned under its nonce
  -- with "/w" (the deposit returned what it did not keep as "/x"); an entry without "#<units>" (an older
  -- version's, "<nonce>:<k>") holds one token, under its own nonce.
  for _, entry in ipairs(rcall('ZRANGEBYSCORE', pool, '(' .. intArg(nowMs * 1000), '+inf')) do
    local grantUs, leaseMs, rest = string.match(entry, '^(%d+):(%d+):(.+)$')
    local nonce, units = string.match(rest, '^(.*)#(%d+)$')
    reply[#reply + 1] = bucketId
    reply[#reply + 1] = grantUs
    reply[#reply + 1] = leaseMs
    reply[#reply + 1] = nonce and nonce .. '/w' or rest
    reply[#reply + 1] = tonumber(units) or 1
    reply[1] = reply[1] + 1
  end
  rcall('DEL', pool)
end
rcall('DEL', poolsKey)
return reply
