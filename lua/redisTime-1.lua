--[[
  The clock of the Redis node that holds a key: in Redis Cluster a keyless TIME goes to any node, while a
  script is sent to the master of its first key's slot, so this reads the clock that the scripts writing
  that key read. Reads and writes nothing.

  Input:
    KEYS[1] any key of the slot whose clock is wanted (not read)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: the node's time in microseconds (an integer: exact, being below 2^53)
]]
local rcall = redis.call

--- @include "includes/nowUs"

return nowUs()
