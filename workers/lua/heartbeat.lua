-- Record a consumer's heartbeat in its group's registry and list the live members.
-- KEYS[1]: the registry sorted set (ls:registry:<group>:<topic>), member = consumer id,
--          score = time of the last heartbeat (ms, Redis clock)
-- ARGV[1]: consumer id ('' to only list)
-- ARGV[2]: heartbeat timeout in ms: members silent for longer are removed
-- Returns: {now_ms, member, member, ...} live members in sorted order
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
end
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
local out = {now}
for _, m in ipairs(members) do out[#out + 1] = m end
return out
