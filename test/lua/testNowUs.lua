--[[
  Test builds only: the Redis server's clock shifted by the offset (ms) that test runners append as the
  last ARGV, so that tests can move time forward without waiting; or, when that ARGV is "@<us>", a clock
  stopped at that time (a test that must see one exact instant, whatever the machine's speed).
]]
local function nowUs()
  local arg = ARGV[#ARGV]
  if string.sub(arg, 1, 1) == '@' then return tonumber(string.sub(arg, 2)) end
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) + math.floor(tonumber(arg) * 1000 + 0.5)
end
