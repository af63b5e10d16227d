export { keysUnder, deleteKeysUnder } from '../../src/redis/keysUnder';
