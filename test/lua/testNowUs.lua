--[[
  Test builds only: the Redis server's clock shifted by the offset (ms) that test runners append as the
  last ARGV, so that tests can move time forward without waiting.
]]
local function nowUs()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) + math.floor(tonumber(ARGV[#ARGV]) * 1000 + 0.5)
end
