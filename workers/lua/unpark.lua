-- Fenced removal of one parked message once it was handled (or dead-lettered again).
-- When the key's parked set becomes empty and the key is releasing, the key is freed.
-- Prelude: fence (workers/lua/_fence.lua: `now`, `fence_check`)
-- KEYS[1]: the lock hash         (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the parked-keys hash  (ls:{topic:queue}:parked:<group>)
-- KEYS[3]: the key's parked set  (ls:{topic:queue}:parked:<group>:<key>)
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token
-- ARGV[3]: sharding key
-- ARGV[4]: serialised message to remove ('' to free a releasing key with nothing parked)
-- Returns: {1, remaining, freed} on success (freed 1 when the key was released),
--          {0, token} when fenced out, {-1, token} when the lock expired.
local token, refused = fence_check(KEYS[1], ARGV[1], ARGV[2])
if refused then return refused end
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
