--[[
  The returned-set of a throttle (ZSET token nonce -> ms when it stops mattering), which makes a second
  return of one token a no-op. Needs includes/windowCounter.
]]
-- When tokens granted at grantUs with leaseMs stop mattering to these counters (ms): their latest release.
local function releasedMsOf(counters, grantUs, leaseMs)
  local matters = 0
  for _, counter in ipairs(counters) do
    local k = slotOf(counter, grantUs, leaseMs)
    local releasedMs = math.ceil(k * counter.g.slot / 1000)
    if releasedMs > matters then matters = releasedMs end
  end
  return matters
end

-- True the first time `nonce` is returned while it still matters; the set then expires with its newest member.
local function markReturned(setKey, nonce, mattersMs, nowMs)
  if mattersMs <= nowMs or rcall('ZADD', setKey, 'NX', mattersMs, nonce) == 0 then return false end
  rcall('PEXPIREAT', setKey, tonumber(rcall('ZRANGE', setKey, -1, -1, 'WITHSCORES')[2]))
  return true
end
