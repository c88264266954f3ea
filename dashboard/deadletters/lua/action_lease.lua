-- Renew or give back an action runner's lease (dashboard/deadletters/lease.py). Taking
-- it is a plain SET NX PX; renewing and giving it back must only touch a lease the caller
-- still holds, which needs the compare and the write in one step.
-- KEYS[1]: the lease (lockstep-web:action-lease:<request id>)
-- ARGV[1]: the caller's token (what it SET when it took the lease)
-- ARGV[2]: the new time to live in ms; 0 gives the lease back (DEL)
-- Returns: 1 when the caller held the lease (renewed or given back), 0 when it did not
--          (it expired, and maybe another runner took it).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if tonumber(ARGV[2]) == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
