import { bullmq5 } from '../../src/bullmq/bullmq5';
import { bullmq6 } from '../../src/bullmq/bullmq6';
import { installedBullmqVersion } from '../../src/bullmq/installedBullmq';
import { selectAdapter, SUPPORTED_BULLMQ_RANGE } from '../../src/bullmq/selectAdapter';
import { UnsupportedBullmqError } from '../../src/errors/UnsupportedBullmqError';
import { assertSupportedBullmq } from '../../src';

const peerRange = (require('../../package.json') as { peerDependencies: Record<string, string> }).peerDependencies.bullmq;

describe('selectAdapter', () => {
  it('picks bullmq 5 from 5.67.0 through every later 5.x, and bullmq 6 for every 6.x', () => {
    for (const version of ['5.67.0', '5.70.1', '5.81.5', '5.99.99']) expect(selectAdapter(version)).toBe(bullmq5);
    for (const version of ['6.0.0', '6.6.3', '6.7.0', '6.99.0']) expect(selectAdapter(version)).toBe(bullmq6);
  });

  it('refuses what no adapter supports with UnsupportedBullmqError naming the range, the version and the fix', () => {
    for (const version of ['4.18.0', '5.0.0', '5.66.2', '7.0.0', 'not-a-version']) {
      expect(() => selectAdapter(version)).toThrow(UnsupportedBullmqError);
    }
    expect(() => selectAdapter('5.66.2')).toThrow(
      'bullmq-throttle supports bullmq ^5.67.0 || ^6.0.0, but bullmq 5.66.2 is installed: ' +
        'install a supported version (npm install bullmq@6, or npm install bullmq@^5.67.0 to stay on bullmq 5).',
    );
    expect(() => assertSupportedBullmq('7.0.0')).toThrow(`supports bullmq ${SUPPORTED_BULLMQ_RANGE}`);
  });

  it('the supported range is the one package.json declares to npm', () => {
    expect(peerRange).toBe(SUPPORTED_BULLMQ_RANGE);
  });

  it('the installed bullmq (the line under test) is supported, and its adapter is its line', () => {
    const version = installedBullmqVersion();
    expect(selectAdapter().line).toBe(Number(version.split('.')[0]));
    expect(() => assertSupportedBullmq()).not.toThrow();
  });
});
