-- Fenced removal of one parked message once it was handled (or dead-lettered again).
-- When the key's parked set becomes empty and the key is releasing, the key is freed.
-- KEYS[1]: the lock hash         (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the parked-keys hash  (ls:{topic:queue}:parked:<group>)
-- KEYS[3]: the key's parked set  (ls:{topic:queue}:parked:<group>:<key>)
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token
-- ARGV[3]: sharding key
-- ARGV[4]: serialised message to remove ('' to free a releasing key with nothing parked)
-- Returns: {1, remaining, freed} on success (freed 1 when the key was released),
--          {0, token} when fenced out, {-1, token} when the lock expired.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = redis.call('HGET', KEYS[1], 'owner')
local token = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if owner ~= ARGV[1] or token ~= tonumber(ARGV[2]) then
  return {0, token}
end
if tonumber(redis.call('HGET', KEYS[1], 'expires_at') or '0') <= now then
  return {-1, token}
end
redis.call('ZREM', KEYS[3], ARGV[4])
local remaining = redis.call('ZCARD', KEYS[3])
local freed = 0
if remaining == 0 then
  local raw = redis.call('HGET', KEYS[2], ARGV[3])
  if raw and cjson.decode(raw).state == 'releasing' then
    redis.call('HDEL', KEYS[2], ARGV[3])
    freed = 1
  end
end
return {1, remaining, freed}
