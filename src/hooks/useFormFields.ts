import React, { useState } from 'react';

/** A form of text fields: its values and, by field name, the input handler that sets one. */
export function useFormFields<T extends object>(
  initial: T | (() => T)
): [T, (name: keyof T) => (e: React.FormEvent<HTMLInputElement>) => void] {
  const [form, setForm] = useState<T>(initial);
  const set = (name: keyof T) => (e: React.FormEvent<HTMLInputElement>) => {
    const value = e.currentTarget.value;
    setForm((f) => ({ ...f, [name]: value }));
  };
  return [form, set];
}
