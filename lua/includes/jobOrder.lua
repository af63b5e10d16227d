--[[
  The order in which held jobs go: by priority, then first in first out, lifo jobs ahead of the rest of
  their priority (as bullmq orders wait and prioritized). An order is priority * 2^32 + sequence, where
  lifo jobs count down from the middle of the sequence span and the others count up from it; the
  counters live in the queue's state hash (fields fifo and lifo).
]]
local ORDER_SPAN = 0x80000000

local function jobOrder(priority, lifo, sequenceNumber)
  local sequence
  if lifo then
    sequence = ORDER_SPAN - (sequenceNumber % ORDER_SPAN)
  else
    sequence = ORDER_SPAN + (sequenceNumber % ORDER_SPAN)
  end
  return priority * 0x100000000 + sequence
end
