--[[
  Reads several keys at one moment, for figures that must add up (ThrottleAdmin.throttleStats: a throttle's
  buckets at their limit beside the jobs waiting on them, its pauses, overrides and recovery hold): no script
  runs between the reads, and every read that compares with the time compares with the same one. Reads only.
  In Redis Cluster every key must be of one slot: the caller reads each slot's keys with a call of its own
  (src/admin/snapshotRead.ts).

  Input:
    KEYS[i] a key to read
    ARGV[i] how to read KEYS[i]:
      'get'               the string's value (false when absent)
      'hgetall'           every field and value, flat
      'hget:<field>'      that field's value (false when absent; the field is everything after the colon)
      'hmget:<f1>,<f2>'   those fields' values (false for a missing one; the fields hold no ',')
      'zscore:<member>'   that member's score (false when absent; the member is everything after the colon)
      'live'              ZCOUNT from now (ms, exclusive) to +inf: members whose score says they still hold
      'first'             the lowest member and its score (ZRANGE 0 0 WITHSCORES)
      'top:<n>'           the n members of highest positive score, with their scores
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { now in ms, reply_1, ..., reply_#KEYS }
]]
local rcall = redis.call

--- @include "includes/nowUs"

local nowMs = math.floor(nowUs() / 1000)
local replies = { nowMs }
for i = 1, #KEYS do
  local key, op = KEYS[i], ARGV[i]
  local reply
  if op == 'hgetall' then
    reply = rcall('HGETALL', key)
  elseif op == 'get' then
    reply = rcall('GET', key)
  elseif string.sub(op, 1, 5) == 'hget:' then
    reply = rcall('HGET', key, string.sub(op, 6))
  elseif string.sub(op, 1, 7) == 'zscore:' then
    reply = rcall('ZSCORE', key, string.sub(op, 8))
  elseif op == 'live' then
    reply = rcall('ZCOUNT', key, '(' .. string.format('%d', nowMs), '+inf')
  elseif op == 'first' then
    reply = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  elseif string.sub(op, 1, 6) == 'hmget:' then
    local fields = {}
    for field in string.gmatch(string.sub(op, 7), '[^,]+') do fields[#fields + 1] = field end
    reply = rcall('HMGET', key, unpack(fields))
  elseif string.sub(op, 1, 4) == 'top:' then
    reply = rcall('ZREVRANGEBYSCORE', key, '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, tonumber(string.sub(op, 5)))
  else
    return redis.error_reply('readSnapshot: unknown read ' .. tostring(op) .. ' of ' .. key)
  end
  replies[i + 1] = reply
end
return replies
