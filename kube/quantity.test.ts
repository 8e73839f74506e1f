import t from 'tap';
import { formatQuantity, toMilli } from './quantity.ts';

t.test('canonical DecimalSI quantities, as resource.NewMilliQuantity(v, DecimalSI).String()', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0'],
    [1, '1'],
    [42, '42'],
    [999, '999'],
    [1000, '1k'],
    [1500, '1500'],
    [2000, '2k'],
    [1_000_000, '1M'],
    [3_000_000_000, '3G'],
    [2.5, '2500m'],
    [0.5, '500m'],
    [0.001, '1m'],
    [1.5, '1500m'],
    [-3, '-3'],
    [-2000, '-2k'],
    [-0.25, '-250m'],
  ];
  for (const [v, s] of cases) t.equal(formatQuantity(v), s, `${v}`);
});

t.test('milli values round up like Quantity.MilliValue, without float noise', async (t) => {
  t.equal(toMilli(0.1), 100n);
  t.equal(toMilli(0.1 + 0.2), 300n);
  t.equal(toMilli(1 / 3), 334n);
  t.equal(toMilli(2.0004), 2001n);
  t.equal(toMilli(-1 / 3), -333n);
  t.equal(formatQuantity(10 / 3), '3334m');
  t.throws(() => toMilli(NaN));
  t.throws(() => toMilli(Infinity));
});
